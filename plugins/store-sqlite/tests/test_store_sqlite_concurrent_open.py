"""Several processes opening a brand-new database at once: all of them get in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

OPENER = """
import asyncio, sys
from crab_store_sqlite.store import SqliteStore

async def main():
    store = SqliteStore(sys.argv[1])
    await store.open()
    info = await store.create_session("/w")
    await store.append(info.id, "custom", {"plugin": "t"})
    await store.close()

asyncio.run(main())
"""


def test_many_processes_open_a_new_database_together(tmp_path: Path) -> None:
    for round_ in range(3):
        db = tmp_path / f"fresh-{round_}.db"
        processes = [
            subprocess.Popen([sys.executable, "-c", OPENER, str(db)], stderr=subprocess.PIPE, text=True)
            for _ in range(6)
        ]
        errors = [p.communicate(timeout=60)[1] for p in processes]
        assert [p.returncode for p in processes] == [0] * 6, errors
