"""Two processes appending to one session at once: WAL plus BEGIN IMMEDIATE keep one chain."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from crab_store_sqlite import SqliteStore

WRITER = """
import asyncio, sys
from crab_store_sqlite import SqliteStore

async def main():
    store = SqliteStore(sys.argv[1])
    await store.open()
    for i in range(int(sys.argv[4])):
        await store.append(sys.argv[2], "message", {"v": 1, "role": "user", "content": sys.argv[3] + str(i)})
    await store.close()

asyncio.run(main())
"""


def test_two_processes_append_to_one_session(tmp_path: Path) -> None:
    path = tmp_path / "crab.db"

    async def create() -> str:
        store = SqliteStore(path)
        await store.open()
        try:
            return (await store.create_session("/w")).id
        finally:
            await store.close()

    session_id = asyncio.run(create())
    count = 300
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), session_id, name, str(count)]) for name in ("a", "b")
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]

    async def read() -> None:
        store = SqliteStore(path)
        await store.open()
        entries = await store.entries(session_id)
        info = await store.get_session(session_id)
        await store.close()
        assert len(entries) == 2 * count
        assert info.entry_count == 2 * count
        parent = None
        for entry in entries:
            assert entry.parent_id == parent
            parent = entry.id
        for name in ("a", "b"):
            mine = [str(e.payload["content"]) for e in entries if str(e.payload["content"]).startswith(name)]
            assert mine == [f"{name}{i}" for i in range(count)]

    asyncio.run(read())
