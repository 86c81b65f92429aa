"""Resuming after a handoff reads only what follows it: the bytes before are never touched."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest
from crab.storage import Entry
from crab_tape_jsonl import TapeStore, TornLineWarning


def test_since_handoff_never_reads_the_lines_before_the_anchor(tmp_path: Path) -> None:
    async def build() -> tuple[str, list[Entry]]:
        store = TapeStore(tmp_path)
        await store.open()
        info = await store.create_session("/w")
        for i in range(500):
            await store.append(info.id, "message", {"v": 1, "role": "user", "content": f"old {i}"})
        anchor = await store.append(info.id, "anchor", {"name": "h", "kind": "handoff", "state": {"summary": "s"}})
        tail = [
            await store.append(info.id, "message", {"v": 1, "role": "user", "content": f"new {i}"}) for i in range(3)
        ]
        await store.close()
        return info.id, [anchor, *tail]

    session_id, recent = asyncio.run(build())
    path = next(tmp_path.glob(f"*/{session_id}.jsonl"))
    data = bytearray(path.read_bytes())
    # Scribble over every old entry (keeping the newlines): any read of them would warn.
    first_nl = data.index(b"\n")
    anchor_at = data.index(b'"kind":"handoff"')
    anchor_start = data.rindex(b"\n", 0, anchor_at) + 1
    for i in range(first_nl + 1, anchor_start):
        if data[i] != ord("\n"):
            data[i] = ord("#")
    path.write_bytes(bytes(data))

    store = TapeStore(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert asyncio.run(store.entries(session_id, since_handoff=True)) == recent
    with pytest.warns(TornLineWarning):
        assert asyncio.run(store.entries(session_id)) == recent
