"""A crab process on the PostgreSQL store whose server goes away, for the log-line tests.

    python store_postgres_outage_worker.py DSN SCHEMA SECONDS

Opens the store, prints ``open`` and waits for a line on stdin (the test stops the server then),
then keeps using the store for SECONDS as a long-running process would (a call every 0.1 s, each
failing), printing ``failed`` once, and closes it. No agent runs, so what psycopg reports goes to
stderr: the test reads it there.
"""

from __future__ import annotations

import asyncio
import sys
import time

from crab import StoreError
from crab_store_postgres import PostgresStore


async def main(dsn: str, schema: str, seconds: float) -> None:
    store = PostgresStore(dsn, schema=schema, pool_size=4, connect_timeout=1)
    await store.open()
    info = await store.create_session("/work")
    print("open", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    said = False
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            await store.get_session(info.id)
        except StoreError:
            if not said:
                print("failed", flush=True)
                said = True
        await asyncio.sleep(0.1)
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
