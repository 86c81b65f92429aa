"""Several crab processes on one session: concurrent appends keep one chain; a killed worker's
session is taken over by another with nothing lost, doubled or half-written."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from crab.testing import assert_chain
from crab_store_postgres import PostgresStore

WORKER = Path(__file__).with_name("store_postgres_worker.py")
pytestmark = pytest.mark.slow


def _store(dsn: str, schema: str) -> PostgresStore:
    store = PostgresStore(dsn, schema=schema)
    asyncio.run(store.open())
    return store


def _worker(dsn: str, schema: str, session: str, label: str, count: int, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), dsn, schema, session, label, str(count), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_four_workers_appending_to_one_session_keep_one_chain(pg_dsn: str, pg_schema: str) -> None:
    store = _store(pg_dsn, pg_schema)
    try:
        info = asyncio.run(store.create_session("/work/shared"))
        workers = [_worker(pg_dsn, pg_schema, info.id, f"w{n}", 40) for n in range(4)]
        printed: list[str] = []
        for worker in workers:
            out, err = worker.communicate(timeout=120)
            assert worker.returncode == 0, err
            printed += out.split()
        entries = asyncio.run(store.entries(info.id))
    finally:
        asyncio.run(store.close())
    assert len(entries) == 160
    assert sorted(e.id for e in entries) == sorted(printed)  # none lost, none doubled
    assert_chain(entries)
    for n in range(4):  # each worker's own appends stay in its order
        mine = [e.payload["content"] for e in entries if e.payload["content"].startswith(f"w{n} ")]
        assert mine == [f"w{n} {i}" for i in range(40)]
    assert [e.time for e in entries] == sorted(e.time for e in entries)
    assert asyncio.run(_count(pg_dsn, pg_schema, info.id)) == 160


async def _count(dsn: str, schema: str, session_id: str) -> int:
    store = PostgresStore(dsn, schema=schema)
    await store.open()
    try:
        return (await store.get_session(session_id)).entry_count or 0
    finally:
        await store.close()


def test_a_worker_killed_inside_an_append_leaves_the_session_to_the_next(pg_dsn: str, pg_schema: str) -> None:
    store = _store(pg_dsn, pg_schema)
    try:
        info = asyncio.run(store.create_session("/work/shared"))
        dying = _worker(pg_dsn, pg_schema, info.id, "dying", 5, "--die-inside")
        assert dying.stdout is not None
        lines = [dying.stdout.readline().strip() for _ in range(6)]
        assert lines[-1] == "inside", (lines, dying.stderr.read() if dying.stderr else "")
        committed = lines[:5]
        os.kill(dying.pid, signal.SIGKILL)
        dying.wait(timeout=30)
        # The next worker gets the session's lock once the server sees the connection gone.
        after = _worker(pg_dsn, pg_schema, info.id, "next", 3)
        out, err = after.communicate(timeout=60)
        assert after.returncode == 0, err
        entries = asyncio.run(store.entries(info.id))
        got = asyncio.run(store.get_session(info.id))
    finally:
        asyncio.run(store.close())
    assert [e.id for e in entries] == committed + out.split()
    assert "dying never" not in [e.payload["content"] for e in entries]
    assert_chain(entries)
    assert got.entry_count == 8
