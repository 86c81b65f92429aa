"""Benchmark of image storage: bytes on disk per image attached twice, per store, side by side.

Each store gets the same session through the real loop (``crab.testing.AgentHarness``): one
image attached to two messages. "blobs" is the store as shipped (``crab.storage.BlobStore``: the bytes
once, by hash); "inline" is the same store with the capability hidden, so the loop writes the
image as base64 into each entry, which is what storing it in every line would cost. The
figures are the growth of the store's files (after closing it, so SQLite's WAL is folded in)
less that of the same session without the image (its text, events and system prompt).
PostgreSQL keeps its bytes in a server, not in a file of its own, so it is not measured here.
Usage: ``.venv/bin/python bench/images.py [--size 256]`` (the side of the noise PNG, pixels).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import crab
from crab.testing import AgentHarness, make_png


class _Inline:
    """A store with its blob capability hidden: the loop inlines images as base64 per entry."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name

    def __getattr__(self, name: str) -> Any:
        if name in ("put_blob", "get_blob"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def _disk(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _tape(root: Path) -> Any:
    from crab_tape_jsonl.store import TapeStore

    return TapeStore(root)


def _sqlite(root: Path) -> Any:
    from crab_store_sqlite.store import SqliteStore

    return SqliteStore(root / "crab.db")


STORES: dict[str, Callable[[Path], Any]] = {"jsonl": _tape, "sqlite": _sqlite}


def measure(make: Callable[[Path], Any], image: crab.messages.ImagePart | None, *, inline: bool = False) -> int:
    """Bytes the store's files grow by for one session that attaches ``image`` twice (None: no image)."""

    def opened() -> Any:
        store = make(root)
        return _Inline(store) if inline else store

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        AgentHarness([], store=opened()).close()  # the store's own files (schema, folders) first
        before = _disk(root)
        harness = AgentHarness([[{"text": "seen"}], [{"text": "seen again"}]], store=opened())
        try:
            harness.run("what is this?", images=[image] if image else [])
            harness.run("and this one?", images=[image] if image else [])
        finally:
            harness.close()
        return _disk(root) - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="side of the noise PNG in pixels")
    args = parser.parse_args()
    image = crab.messages.ImagePart.from_bytes(make_png(args.size, args.size, noise=True))
    print(f"image: {image.describe()} ({image.size} bytes), attached to two messages of one session")
    print("bytes on disk for the image (the session's growth less the same session without it):")
    print(f"{'store':8} {'blobs':>12} {'inline':>12} {'inline/blobs':>13} {'blobs/image':>12}")
    for name, make in STORES.items():
        text = measure(make, None)
        blobs = measure(make, image) - text
        inline = measure(make, image, inline=True) - text
        print(f"{name:8} {blobs:>12,} {inline:>12,} {inline / blobs:>13.2f} {blobs / image.size:>12.2f}")


if __name__ == "__main__":
    main()
