"""``crab serve`` on Temporal with PostgreSQL as the shared store (crab-store-postgres, on a
throwaway server of its own): two ``crab worker`` processes and ``crab serve http`` share the
sessions; the worker running a tool call that changes things is killed with SIGKILL mid-call,
and the turn completes on the other one: the call ran once (a marker file counts its effect), it
has exactly one result (crab's stand-in), and the client's stream ends with the turn's answer."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from temporal_serve_site import (
    configure,
    conversation,
    exported,
    install_echo,
    post,
    results_per_call,
    session,
    start_serve,
    start_worker,
    token,
)
from temporal_site import DEADLINE, Site, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crab-temporal-server")]

PLUGINS = "serve-echo,store-postgres,tools-basic,temporal"
STAND_IN = "Interrupted: crab was stopped before this tool call finished."


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A DSN of a throwaway PostgreSQL server (crab-store-postgres's ``TempCluster``, as its own
    tests and the repository's use)."""
    try:
        from crab_store_postgres.testing import TempCluster, find_binaries
    except ImportError:
        binaries = None
        why = "crab-store-postgres is not installed (pip install 'crab-temporal[test]')"
    else:
        binaries = find_binaries()
        why = "no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql"
    if binaries is None:
        if os.environ.get("CI"):
            pytest.fail(f"{why}; CI must run this test (.ci/run installs postgresql)")
        pytest.skip(why)
    cluster = TempCluster(binaries).start()
    try:
        yield cluster.dsn()
    finally:
        cluster.stop()


def test_a_worker_killed_mid_tool_call_the_turn_completes_on_the_other_with_one_effect(site: Site, postgres: str):
    install_echo(site)
    schema = f"temporal{os.getpid()}"
    store = f'[crab]\nstore = "postgres"\n[plugins.store-postgres]\ndsn = "{postgres}"\nschema = "{schema}"\n'
    configure(site, store=store)
    key = token(site, "laptop", PLUGINS)
    workers = {name: start_worker(site, name, PLUGINS) for name in ("a", "b")}
    marker = site.root / "effects"
    serve = start_serve(site, PLUGINS)
    try:
        session_id = session(serve.url, key)
        command = f'echo "$$ $WORKER_NAME" >> {marker}; sleep 120; echo late >> {marker}'
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(post, serve.url, key, session_id, f"run: {command}")
            line = wait_for(lambda: marker.exists() and marker.read_text().strip(), "the tool call to start")
            tool_pid, owner = line.split()
            workers[owner].kill()  # SIGKILL, the whole worker's process group
            try:
                os.kill(int(tool_pid), signal.SIGKILL)  # an orphan would sleep on; its effect is counted
            except ProcessLookupError:
                pass
            events: list[dict[str, Any]] = running.result(timeout=DEADLINE * 3)
    finally:
        assert serve.stop() == 0, serve.log()
    survivor = next(worker for name, worker in workers.items() if name != owner)
    assert survivor.process.poll() is None
    end = events[-1]
    assert end["type"] == "turn_end" and end["stop"] == "end", events
    assert end["text"] == f"done: {STAND_IN}"
    assert marker.read_text().splitlines() == [line]  # ran once: never again on the other worker
    entries = exported(site, session_id, PLUGINS)
    assert list(results_per_call(entries).values()) == [1]
    assert conversation(entries) == [
        ("user", f"run: {command}"),
        ("assistant", f"running {command}"),
        ("tool", STAND_IN),
        ("assistant", f"done: {STAND_IN}"),
    ]
    assert "Traceback" not in serve.log()
    assert json.dumps(entries).count("crab-temporal.tool-started") == 1
