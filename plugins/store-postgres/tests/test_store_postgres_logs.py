"""What psycopg reports while the server is gone: crab's own one-line warnings, never its raw log.

Each test stops a throwaway server of its own (the shared one stays up for the other tests).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import crab
import crab_store_postgres
import pytest
from crab.testing import AgentHarness
from crab_store_postgres import PostgresStore
from crab_store_postgres.testing import TempCluster, find_binaries

WORKER = Path(__file__).with_name("store_postgres_outage_worker.py")
RAW = ("Is the server running", "<psycopg.", "discarding closed connection:")  # what psycopg's own lines hold


@pytest.fixture
def own_cluster() -> Iterator[TempCluster]:
    binaries = find_binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql")
    cluster = TempCluster(binaries).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _stop_server(cluster: TempCluster) -> None:
    done = cluster._run("pg_ctl", "-D", str(cluster.root / "data"), "-m", "immediate", "-w", "stop")
    assert done.returncode == 0, done.stderr


def test_without_an_agent_psycopgs_records_are_one_crab_line_each_on_stderr(own_cluster: TempCluster) -> None:
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), own_cluster.dsn(), "outage", "4"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None and worker.stdin is not None
        assert worker.stdout.readline().strip() == "open"
        _stop_server(own_cluster)  # the server goes away while the process keeps using it
        worker.stdin.write("go\n")
        worker.stdin.flush()
        out, stderr = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert out.strip() == "failed"
    lines = stderr.splitlines()
    assert lines, "the outage was reported"
    assert all(line.startswith("warning: store-postgres: ") for line in lines), stderr
    assert len(lines) == len(set(lines)) <= 3, stderr  # each said once, not once per retry
    assert not any(raw in stderr for raw in RAW), stderr
    assert "Traceback" not in stderr


def test_under_an_agent_they_are_its_warning_notices(own_cluster: TempCluster) -> None:
    store = PostgresStore(own_cluster.dsn(), schema="agent", connect_timeout=1)
    harness = AgentHarness(
        [[{"delay": 1.5}, {"text": "never stored"}]],
        plugins={"store-postgres": crab_store_postgres},
        store=store,
    )
    try:
        stopper = threading.Timer(0.5, _stop_server, (own_cluster,))
        stopper.start()  # mid-turn: the turn's entries can no longer be written
        outcome = harness.run("hello")
        stopper.join()
        time.sleep(1.5)  # the pool notices and retries meanwhile
        harness.run_async(_settle())
    finally:
        harness.close()
    assert outcome.stop == "error" and "store-postgres" in (outcome.error or "")
    warnings = [e.message for e in harness.events if isinstance(e, crab.events.NoticeEvent) and e.level == "warning"]
    psycopg = [line for line in warnings if line.startswith("store-postgres: ") and "query failed" not in line]
    assert psycopg, warnings  # what the pool reported reached the agent's renderers
    assert len(psycopg) == len(set(psycopg)) and all("\n" not in line for line in psycopg), psycopg
    assert not any(raw in line for raw in RAW for line in psycopg), psycopg


async def _settle() -> None:
    import asyncio

    await asyncio.sleep(0.2)  # notices posted from the store's thread run on the agent's loop
