"""A turn's permission ceiling reaches the workers (``crab_temporal.ceiling``), on the real dev
server with real ``crab worker`` and ``crab run --engine temporal`` processes: the client's mode
narrows the worker's, never widens it."""

from __future__ import annotations

import json
import subprocess

import pytest
from temporal_site import PLUGINS, Site
from test_temporal_turns import exported, results_per_call

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crab-temporal-server")]


def crab_run(site: Site, *args: str) -> subprocess.CompletedProcess[str]:
    command = site.crab("run", "--plugins", PLUGINS, "-m", f"mock/{site.script}", "--engine", "temporal", *args)
    return subprocess.run(
        command,
        cwd=site.workspace,
        env=site.env,
        stdin=subprocess.DEVNULL,  # no terminal: nobody can answer a question
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def results(site: Site, session_id: str) -> list[str]:
    return [r["content"] for rs in results_per_call(exported(site, session_id)).values() for r in rs]


def write_script(site: Site) -> None:
    site.write_script([[{"tool": "write", "args": {"path": "marker.txt", "content": "x"}}], [{"text": "finished"}]])


@pytest.mark.parametrize("flag", ["--read-only", "--plan"])
def test_a_read_only_or_plan_client_on_a_yolo_worker_cannot_write(site: Site, flag: str):
    write_script(site)
    site.start_worker("a", yolo=True)
    ran = crab_run(site, "-o", "json", flag, "write the marker")
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)
    assert doc["text"] == "finished"
    assert not (site.workspace / "marker.txt").exists()
    [refusal] = results(site, doc["session_id"])
    words = "crab runs read-only (--read-only)" if flag == "--read-only" else "this session is in plan mode"
    assert refusal.startswith("Refused: write needs write permission and ") and words in refusal


def test_a_yolo_client_on_an_ask_worker_is_still_asked_and_without_a_terminal_refused(site: Site):
    write_script(site)
    site.start_worker("a", yolo=False)
    ran = crab_run(site, "-o", "json", "--yolo", "write the marker")
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)
    assert not (site.workspace / "marker.txt").exists()
    [refusal] = results(site, doc["session_id"])
    assert refusal.startswith("Refused: write needs write permission and nobody answered"), refusal


def test_a_yolo_client_on_a_yolo_worker_writes(site: Site):
    # The ceiling only narrows: the same turn without one narrower than the worker's runs the call.
    write_script(site)
    site.start_worker("a", yolo=True)
    ran = crab_run(site, "-o", "json", "--yolo", "write the marker")
    assert ran.returncode == 0, ran.stderr
    assert (site.workspace / "marker.txt").read_text() == "x"


def test_crab_temporal_run_takes_the_same_flags_and_its_read_only_narrows_a_yolo_worker(site: Site):
    write_script(site)
    site.start_worker("a", yolo=True)
    ran = site.run("write the marker", "-o", "json", "--read-only")  # its environment says yolo: the flag wins
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)
    assert not (site.workspace / "marker.txt").exists()
    [refusal] = results(site, doc["session_id"])
    assert "crab runs read-only (--read-only)" in refusal
    both = site.run("write the marker", "--yolo", "--plan")
    assert both.returncode == 2
    assert both.stderr.strip().splitlines() == ["crab: --yolo and --plan contradict each other; pick one"]
