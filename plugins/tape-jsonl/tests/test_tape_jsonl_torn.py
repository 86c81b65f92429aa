"""A tape whose last line was cut short by a crash: skipped with a warning, never glued onto."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path

import pytest
from crab.storage import Entry
from crab_tape_jsonl import TapeStore, TornLineWarning


def user(text: str) -> dict[str, object]:
    return {"v": 1, "role": "user", "content": text}


def make_session(root: Path, count: int) -> tuple[str, list[Entry], Path]:
    async def go() -> tuple[str, list[Entry], Path]:
        store = TapeStore(root)
        await store.open()
        info = await store.create_session("/w")
        entries = [await store.append(info.id, "message", user(f"m{i}")) for i in range(count)]
        await store.close()
        return info.id, entries, next(root.glob(f"*/{info.id}.jsonl"))

    return asyncio.run(go())


def tear(path: Path) -> bytes:
    """Append what a crash half-way through writing a line leaves: a prefix, no newline."""
    torn = b'{"id":"deadbeef0000","parent_id":"x","type":"message","time":1.0,"payload":{"v":1,"ro'
    with open(path, "ab") as handle:
        handle.write(torn)
    return torn


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    session_id, written, path = make_session(tmp_path, 3)
    tear(path)
    store = TapeStore(tmp_path)
    with pytest.warns(TornLineWarning, match="byte"):
        got = asyncio.run(store.entries(session_id))
    assert got == written
    with pytest.warns(TornLineWarning):
        assert asyncio.run(store.entries(session_id, since_handoff=True)) == written


def test_the_next_append_starts_on_a_fresh_line(tmp_path: Path) -> None:
    session_id, written, path = make_session(tmp_path, 3)
    torn = tear(path)

    async def append_after_crash() -> Entry:
        store = TapeStore(tmp_path)
        await store.open()
        try:
            return await store.append(session_id, "message", user("after the crash"))
        finally:
            await store.close()

    with pytest.warns(TornLineWarning):
        new = asyncio.run(append_after_crash())
    assert new.parent_id == written[-1].id
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert lines[-3] == torn
    assert json.loads(lines[-2])["id"] == new.id
    with pytest.warns(TornLineWarning):
        got = asyncio.run(TapeStore(tmp_path).entries(session_id))
    assert got == [*written, new]


def test_a_store_that_wrote_before_the_crash_notices_the_torn_tail(tmp_path: Path) -> None:
    async def go() -> None:
        store = TapeStore(tmp_path)
        await store.open()
        info = await store.create_session("/w")
        first = await store.append(info.id, "message", user("one"))
        tear(next(tmp_path.glob(f"*/{info.id}.jsonl")))
        with pytest.warns(TornLineWarning):
            second = await store.append(info.id, "message", user("two"))
        assert second.parent_id == first.id
        with pytest.warns(TornLineWarning):
            assert [e.id for e in await store.entries(info.id)] == [first.id, second.id]
        await store.close()

    asyncio.run(go())


def test_a_complete_line_without_its_newline_is_not_read_until_ended(tmp_path: Path) -> None:
    session_id, written, path = make_session(tmp_path, 2)
    content = path.read_bytes()
    path.write_bytes(content[:-1])
    with pytest.warns(TornLineWarning):
        assert asyncio.run(TapeStore(tmp_path).entries(session_id)) == written[:1]


def test_an_intact_tape_reads_without_warnings(tmp_path: Path) -> None:
    session_id, written, path = make_session(tmp_path, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert asyncio.run(TapeStore(tmp_path).entries(session_id)) == written
    for line in path.read_text(encoding="utf-8").splitlines():
        json.loads(line)
