"""Listing installed entry points by reading ``entry_points.txt`` files, without importlib.metadata.

Every ``crab`` command lists the plugins' entry points, ``crab --help`` included. The standard
``importlib.metadata`` imports about 45 modules to do it (email, zipfile, csv, tempfile…); this
module reads the same files directly: each ``*.dist-info`` (or ``*.egg-info``) folder in the
folders of ``sys.path``, in ``sys.path`` order, the first copy of a distribution winning, as
``importlib.metadata.entry_points`` does. Distributions inside zip files are not listed.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

_SUFFIXES = (".dist-info", ".egg-info")
_SEPARATORS = re.compile(r"[-_.]+")


@dataclass(frozen=True, slots=True)
class Distribution:
    """The installed distribution an entry point comes from."""

    name: str
    version: str


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """One entry point: ``name = module:attribute`` in ``group``; ``load()`` imports it."""

    name: str
    value: str
    group: str
    dist: Distribution | None = None

    def load(self) -> Any:
        target = self.value.split("[", 1)[0].strip()  # drop "[extra]"
        module, _, attribute = target.partition(":")
        loaded: Any = importlib.import_module(module.strip())
        for part in attribute.strip().split(".") if attribute.strip() else ():
            loaded = getattr(loaded, part)
        return loaded


def _normalized(name: str) -> str:
    return _SEPARATORS.sub("-", name).lower()


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _metadata(folder: str) -> Distribution | None:
    """Name and version from the headers of METADATA (or PKG-INFO for egg-info)."""
    text = _read(os.path.join(folder, "METADATA")) or _read(os.path.join(folder, "PKG-INFO"))
    if text is None:
        return None
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line; the description follows
        key, sep, value = line.partition(":")
        if sep and key in ("Name", "Version") and key not in fields:
            fields[key] = value.strip()
    name = fields.get("Name")
    return Distribution(name, fields.get("Version", "")) if name else None


def parse_entry_points(text: str, group: str, dist: Distribution | None = None) -> list[EntryPoint]:
    """The entries of ``[group]`` in an ``entry_points.txt`` text."""
    found: list[EntryPoint] = []
    current: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
            continue
        name, sep, value = line.partition("=")
        if current == group and sep and name.strip() and value.strip():
            found.append(EntryPoint(name.strip(), value.strip(), group, dist))
    return found


def _distribution_folders(paths: Iterable[str]) -> Iterator[str]:
    for entry in paths:
        folder = entry or "."
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue  # not a folder (a zip file), or unreadable
        for name in names:
            if name.endswith(_SUFFIXES):
                yield os.path.join(folder, name)


def entry_points(group: str, paths: Iterable[str] | None = None) -> list[EntryPoint]:
    """Every installed entry point of ``group``, in ``sys.path`` order, each distribution once."""
    seen: set[str] = set()
    found: list[EntryPoint] = []
    for folder in _distribution_folders(sys.path if paths is None else paths):
        stem = os.path.basename(folder).rsplit(".", 1)[0]
        key = _normalized(stem.split("-", 1)[0])  # "crab_tape_jsonl-0.1.0.dist-info" → "crab-tape-jsonl"
        if key in seen:
            continue
        seen.add(key)
        text = _read(os.path.join(folder, "entry_points.txt"))
        if text and f"[{group}]" in text.replace(" ", ""):
            found.extend(parse_entry_points(text, group, _metadata(folder)))
    return found
