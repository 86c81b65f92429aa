"""Counting a long tape's entries reads only what was appended since the last count."""

from __future__ import annotations

import asyncio
from pathlib import Path

from crab_tape_jsonl import TapeStore
from crab_tape_jsonl.linecount import cache_path


def big(text: str) -> dict[str, object]:
    return {"v": 1, "role": "tool", "call_id": "c", "name": "read", "content": text * 3000}


def test_entry_count_is_cached_for_long_tapes_and_stays_right(tmp_path: Path) -> None:
    store = TapeStore(tmp_path)

    async def go() -> None:
        await store.open()
        small = await store.create_session("/w")
        await store.append(small.id, "message", {"v": 1, "role": "user", "content": "hi"})
        assert (await store.get_session(small.id)).entry_count == 1
        tape = next(tmp_path.glob(f"*/{small.id}.jsonl"))
        assert not cache_path(tape).exists()

        info = await store.create_session("/w")
        for i in range(400):
            await store.append(info.id, "tool_result", big(str(i % 10)))
        tape = next(tmp_path.glob(f"*/{info.id}.jsonl"))
        assert (await store.get_session(info.id)).entry_count == 400
        assert cache_path(tape).exists()
        for _ in range(5):
            await store.append(info.id, "message", {"v": 1, "role": "user", "content": "more"})
        assert (await store.get_session(info.id)).entry_count == 405

        # A cache that does not fit the tape (here: claims more bytes than there are) is ignored.
        cache_path(tape).write_text(f"{tape.stat().st_size * 2} 7\n", encoding="ascii")
        assert (await store.get_session(info.id)).entry_count == 405
        cache_path(tape).write_text("garbage", encoding="ascii")
        assert (await store.get_session(info.id)).entry_count == 405
        await store.close()

    asyncio.run(go())
