"""A crab process appending to one session of the PostgreSQL store, for the multi-worker tests.

    python store_postgres_worker.py DSN SCHEMA SESSION LABEL COUNT [--die-inside]

Prints each appended entry's id as soon as ``append`` returns (so the test knows it is durable).
``--die-inside`` makes the COUNT+1-th append stop forever inside its transaction, after its
entry row is written and while it holds the session's lock, and prints ``inside``: the test
kills the process there with SIGKILL.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from crab_store_postgres import PostgresStore


async def main(dsn: str, schema: str, session_id: str, label: str, count: int, die_inside: bool) -> None:
    store = PostgresStore(dsn, schema=schema, pool_size=2)
    await store.open()
    try:
        for i in range(count):
            entry = await store.append(session_id, "message", {"v": 1, "role": "user", "content": f"{label} {i}"})
            print(entry.id, flush=True)
        if die_inside:
            original = PostgresStore._add_to_session

            async def stall(conn: Any, sid: str, added: Any) -> None:
                await original(conn, sid, added)
                print("inside", flush=True)
                await asyncio.sleep(3600)

            PostgresStore._add_to_session = staticmethod(stall)  # type: ignore[method-assign]
            await store.append(session_id, "message", {"v": 1, "role": "user", "content": f"{label} never"})
    finally:
        await store.close()


if __name__ == "__main__":
    dsn, schema, session_id, label, count = sys.argv[1:6]
    asyncio.run(main(dsn, schema, session_id, label, int(count), "--die-inside" in sys.argv[6:]))
