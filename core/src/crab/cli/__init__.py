"""The ``crab`` console script: a fast path for ``--version``, then the typer app."""

from __future__ import annotations

import sys


def main() -> None:
    """Entry point of the ``crab`` command."""
    args = sys.argv[1:]
    if args in (["--version"], ["-V"]):
        from crab._version import __version__

        print(f"crab {__version__}")
        return
    from crab.cli.app import run_app

    sys.exit(run_app(args))
