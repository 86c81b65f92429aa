"""Listing installed entry points as ``importlib.metadata.entry_points(group=...)`` does, by reading
``*.dist-info``/``*.egg-info`` folders itself (checked against it by ``core/tests/test_entrypoints.py``).

Not pluggy's ``load_setuptools_entrypoints`` nor ``importlib.metadata``, which it calls: with
the 22 plugins of this repository installed, listing them by hand costs 13.7 ms of CPU, its own
import included, and importlib.metadata 28.9 ms and 73 more modules, on every ``crab`` command
(``crab --help`` is held to 150 modules)."""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

_SUFFIXES = (".dist-info", ".egg-info")
_SEPARATORS = re.compile(r"[-_.]+")


# NamedTuples, not dataclasses: ``crab --version`` needs nothing else, and dataclasses would bring
# inspect, ast, dis and tokenize, half of what it imports.
class Distribution(NamedTuple):
    """The installed distribution an entry point comes from."""

    name: str
    version: str


class EntryPoint(NamedTuple):
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


def normalized(name: str) -> str:
    """PEP 503: ``Crab.Foo_bar`` and ``crab-foo-bar`` are one distribution."""
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
        key = key.lower()  # email headers, as importlib.metadata reads them: any case
        if sep and key in ("name", "version") and key not in fields:
            fields[key] = value.strip()
    name = fields.get("name")
    return Distribution(name, fields.get("version", "")) if name else None


def parse_entry_points(text: str, group: str, dist: Distribution | None = None) -> list[EntryPoint]:
    """The entries of ``[group]`` in an ``entry_points.txt`` text, read as ``importlib.metadata``
    reads them (only ``#`` starts a comment; ``[ name ]`` strips brackets, not spaces); a line it
    would fail on (no ``=``) or list with an empty name or value is skipped."""
    found: list[EntryPoint] = []
    current: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line.strip("[]")
            continue
        name, sep, value = line.partition("=")
        if current == group and sep and name.strip() and value.strip():
            found.append(EntryPoint(name.strip(), value.strip(), group, dist))
    return found


def _distribution_folders(paths: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(normalized distribution name, metadata folder) in the order importlib.metadata finds them."""
    for entry in paths:
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except OSError:
            continue  # missing or unreadable (a zip file never gets here: see _needs_importlib)
        for name in names:
            if name.lower().endswith(_SUFFIXES):
                # "crab_tape_jsonl-0.1.0.dist-info" → "crab-tape-jsonl", as importlib.metadata's Lookup does
                yield normalized(name.rpartition(".")[0].partition("-")[0]), os.path.join(folder, name)


def _needs_importlib(paths: Sequence[str]) -> bool:
    """Whether some distribution could be where only importlib.metadata looks: inside a zip file
    or an ``.egg`` on the path, or behind a finder other than the standard path finder."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if finder is not PathFinder and getattr(finder, "find_distributions", None) is not None:
            return True
    return any(entry.lower().endswith(".egg") or os.path.isfile(entry) for entry in paths if entry)


def _from_importlib(group: str, paths: Sequence[str]) -> list[EntryPoint]:
    """The same list from importlib.metadata itself (the slow, complete way)."""
    from importlib import metadata

    found: list[EntryPoint] = []
    seen: set[str] = set()
    for dist in metadata.distributions(path=list(paths)):
        # importlib.metadata.entry_points keeps the first distribution of each normalized name
        key = normalized(getattr(dist, "_normalized_name", None) or dist.metadata["Name"] or "")
        if key in seen:
            continue
        seen.add(key)
        origin = Distribution(dist.metadata["Name"], dist.version or "") if dist.metadata["Name"] else None
        found.extend(EntryPoint(ep.name, ep.value, ep.group, origin) for ep in dist.entry_points if ep.group == group)
    return found


def entry_points(group: str, paths: Iterable[str] | None = None) -> list[EntryPoint]:
    """Every installed entry point of ``group``, in ``sys.path`` order, each distribution once.

    By ``importlib.metadata``'s rules: each ``*.dist-info`` or ``*.egg-info`` in the folders of
    ``sys.path``, in path order and in each folder in ``os.listdir`` order, the first copy of a
    distribution (by its folder's normalized name) winning, ``entry_points.txt`` parsed as it
    parses it. Where reading folders cannot answer (a zip or ``.egg`` on the path, a finder of
    distributions other than the standard path finder) ``importlib.metadata`` is asked instead.
    """
    folders = list(sys.path if paths is None else paths)
    if _needs_importlib(folders):
        return _from_importlib(group, folders)
    seen: set[str] = set()
    found: list[EntryPoint] = []
    for key, folder in _distribution_folders(folders):
        if key in seen:
            continue
        seen.add(key)
        text = _read(os.path.join(folder, "entry_points.txt"))
        if text and group in text:
            found.extend(parse_entry_points(text, group, _metadata(folder)))
    return found
