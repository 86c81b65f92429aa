"""A crab process appending to one session of the PostgreSQL store, for the multi-worker tests.

    python store_postgres_worker.py DSN SCHEMA SESSION LABEL COUNT [--die-inside]

Prints each appended entry's id as soon as ``append`` returns (so the test knows it is durable).
``--die-inside`` then runs one more append (the store's own statement) inside a transaction it
never commits, so the entry row is written and the session's lock held, prints ``inside`` and
waits: the test kills the process there with SIGKILL.
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

            async def hold() -> None:
                async with store.pool.connection() as conn, conn.transaction():
                    payload: dict[str, Any] = {"v": 1, "role": "user", "content": f"{label} never"}
                    await store.append_in(conn, session_id, "message", payload)
                    print("inside", flush=True)
                    await asyncio.sleep(3600)

            await store._call(hold())
    finally:
        await store.close()


if __name__ == "__main__":
    dsn, schema, session_id, label, count = sys.argv[1:6]
    asyncio.run(main(dsn, schema, session_id, label, int(count), "--die-inside" in sys.argv[6:]))
