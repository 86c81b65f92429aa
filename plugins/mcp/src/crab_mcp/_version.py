"""This distribution's version, read from its installed metadata."""

from __future__ import annotations


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("crab-mcp")
    except PackageNotFoundError:
        return "0"
