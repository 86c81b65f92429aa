"""crab-schedule's agent jobs under ``[serve] engine = "temporal"``, on the real dev server with a
real ``crab serve schedule`` and a real ``crab worker``: a job's turn runs on the workers held to
the job's mode (``crab_turn_ceilings``), never to the workers' wider one."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from temporal_serve_site import PLUGINS, configure, install_echo, start_serve, start_worker
from temporal_site import Site, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crab-temporal-server")]

SCHEDULING = f"{PLUGINS},schedule"


def schedule(site: Site, *args: str) -> subprocess.CompletedProcess[str]:
    """``crab schedule ARGS`` (its sub-commands take no ``--plugins``: ``CRAB_PLUGINS`` says them)."""
    return subprocess.run(
        [sys.executable, "-m", "crab", "schedule", *args],
        cwd=site.workspace,
        env={**site.env, "CRAB_PLUGINS": SCHEDULING},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def records(site: Site) -> list[dict[str, Any]]:
    shown = schedule(site, "log", "--json")
    assert shown.returncode == 0, shown.stderr
    return list(json.loads(shown.stdout)) if shown.stdout.strip().startswith("[") else []


@pytest.mark.parametrize("mode", ["read-only", "yolo"])
def test_an_agent_job_runs_on_the_workers_held_to_its_own_mode(site: Site, mode: str):
    # crab serve and its worker both run yolo: only the job's own mode can refuse the write.
    install_echo(site)
    configure(site)
    marker = site.root / "marker"
    added = schedule(site, "add", "--prompt", f"run: echo x > {marker}", "--in", "1s", "--permissions", mode)
    assert added.returncode == 0, added.stderr
    start_worker(site, "a")
    serve = start_serve(site, plugins=SCHEDULING, channel="schedule")
    try:
        [entry] = wait_for(lambda: records(site) or None, "the job to run")
    finally:
        assert serve.stop() in (0, -15), serve.log()
    assert entry["status"] == "ok", entry
    if mode == "read-only":
        assert not marker.exists()
        assert entry["text"].startswith("done: Refused: bash needs exec permission and crab runs read-only"), entry
    else:
        assert marker.read_text() == "x\n"
        assert entry["text"] == "done: (no output)", entry
