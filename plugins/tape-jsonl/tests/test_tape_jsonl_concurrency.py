"""Two processes appending to one tape at once: every line whole, one parent chain, nothing lost."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from crab_tape_jsonl import TapeStore

WRITER = """
import asyncio, sys
from crab_tape_jsonl import TapeStore

async def main():
    store = TapeStore(sys.argv[1])
    await store.open()
    for i in range(int(sys.argv[4])):
        text = sys.argv[3] + str(i) + " " + "x" * (i * 37 % 5000)
        await store.append(sys.argv[2], "message", {"v": 1, "role": "user", "content": text})
    await store.close()

asyncio.run(main())
"""


def test_two_processes_append_to_one_session(tmp_path: Path) -> None:
    async def create() -> str:
        store = TapeStore(tmp_path)
        await store.open()
        return (await store.create_session("/w")).id

    session_id = asyncio.run(create())
    count = 300
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), session_id, name, str(count)])
        for name in ("a", "b")
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]

    entries = asyncio.run(TapeStore(tmp_path).entries(session_id))
    assert len(entries) == 2 * count
    parent = None
    for entry in entries:
        assert entry.parent_id == parent
        parent = entry.id
    for name in ("a", "b"):
        mine = [str(e.payload["content"]).split(" ")[0] for e in entries if str(e.payload["content"]).startswith(name)]
        assert mine == [f"{name}{i}" for i in range(count)]
    lines = next(tmp_path.glob(f"*/{session_id}.jsonl")).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 * count + 1
    for line in lines:
        json.loads(line)
