"""crab-schedule's jobs as Temporal Schedules under ``[serve] engine = "temporal"``, on the real
dev server with real ``crab serve schedule`` processes and a real ``crab worker``: each job in the
store gets a schedule ``crab-job-<id>`` (seen with Temporal's own CLI, as a user would), fires
through it (a ``crab-job`` workflow whose argument is the job's id and nothing else), once per
fire however many ``crab serve`` run, never overlapping, and its schedule goes with the job."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
from temporal_serve_site import PLUGINS, configure, install_echo, start_serve, start_worker
from temporal_site import Site, temporal_binary, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crab-temporal-server")]

SCHEDULING = f"{PLUGINS},schedule"
FAST = "[plugins.schedule]\npoll_interval = 0.2\nmin_interval = 0\n"


def schedule(site: Site, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crab", "schedule", *args],
        cwd=site.workspace,
        env={**site.env, "CRAB_PLUGINS": SCHEDULING},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def add(site: Site, *args: str) -> str:
    added = schedule(site, "add", *args)
    assert added.returncode == 0, added.stderr
    found = re.match(r"added (\w+):", added.stdout)
    assert found, added.stdout
    return found.group(1)


def records(site: Site) -> list[dict[str, Any]]:
    shown = schedule(site, "log", "--json", "-n", "200")
    assert shown.returncode == 0, shown.stderr
    return list(json.loads(shown.stdout))


def temporal(site: Site, *args: str) -> subprocess.CompletedProcess[str]:
    """Temporal's own CLI on the test's server (what ``temporal schedule list`` shows a user)."""
    binary = temporal_binary()
    assert binary is not None
    return subprocess.run(
        [binary, *args, "--address", site.address, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def described(site: Site, job_id: str) -> dict[str, Any] | None:
    shown = temporal(site, "schedule", "describe", "--schedule-id", f"crab-job-{job_id}")
    return json.loads(shown.stdout) if shown.returncode == 0 else None


def fired(site: Site, job_id: str, ended: bool = True) -> list[dict[str, Any]]:
    """The ``crab-job`` workflows a job's schedule started (``ended``: those completed)."""
    listed = temporal(site, "workflow", "list", "--query", 'WorkflowType="crab-job"')
    assert listed.returncode == 0, listed.stderr
    text = listed.stdout.strip()
    runs = json.loads(text) if text.startswith("[") else [json.loads(line) for line in text.splitlines()]
    mine = [run for run in runs if run["execution"]["workflowId"].startswith(f"crab-job-{job_id}-")]
    return [run for run in mine if not ended or run.get("status") == "WORKFLOW_EXECUTION_STATUS_COMPLETED"]


def setup(site: Site) -> None:
    install_echo(site)
    configure(site)
    config = site.root / "home" / "config.toml"
    config.write_text(config.read_text() + FAST)


def test_a_job_is_a_temporal_schedule_fired_through_it_and_removed_with_the_job(site: Site):
    setup(site)
    marker = site.root / "marker"
    planted = "planted-Zq8vX3kLw9"  # the prompt stays in the job store: Temporal sees only the job's id
    once = add(site, "--prompt", f"run: echo {planted} >> {marker}", "--in", "1s")
    later = add(site, "--message", "later", "--in", "1h")
    odd = add(site, "--message", "odd", "--every", "1.5s")
    soon = add(site, "--message", "soon", "--in", "1h")
    start_worker(site, "a")
    serve = start_serve(site, plugins=SCHEDULING, channel="schedule")
    try:
        [entry] = wait_for(lambda: [r for r in records(site) if r["job_id"] == once] or None, "the job to fire")
        assert entry["status"] == "ok", entry
        assert entry["text"] == "done: (no output)", entry
        assert marker.read_text() == f"{planted}\n"
        # It fired through its schedule: a crab-job workflow whose argument is the job's id alone.
        [run] = wait_for(lambda: fired(site, once) or None, "the fire's workflow in Temporal")
        history = temporal(site, "workflow", "show", "--workflow-id", run["execution"]["workflowId"])
        assert history.returncode == 0, history.stderr
        assert once in history.stdout
        assert planted not in history.stdout
        # The job waiting an hour is a schedule of its own, once, overlap SKIP, nothing secret in it.
        shown = wait_for(lambda: described(site, later), "the waiting job's schedule")
        assert shown["schedule"]["policies"]["overlapPolicy"] == "SCHEDULE_OVERLAP_POLICY_SKIP", shown
        assert shown["schedule"]["action"]["startWorkflow"]["workflowType"]["name"] == "crab-job", shown
        assert "later" not in json.dumps(shown).replace(f"crab-job-{later}", "")
        # A trigger Temporal cannot say is one line in the schedule log; the others are scheduled.
        [problem] = wait_for(lambda: [r for r in records(site) if r["job_id"] == odd] or None, "the odd job's line")
        assert problem["status"] == "error" and "cannot be scheduled on Temporal" in problem["error"], problem
        # run-now makes it due in the store; the sync fires its schedule (no crab serve's own poll does).
        wait_for(lambda: described(site, soon), "the other waiting job's schedule")
        assert schedule(site, "run-now", soon).returncode == 0
        [now] = wait_for(lambda: [r for r in records(site) if r["job_id"] == soon] or None, "the run-now fire")
        assert (now["status"], now["text"]) == ("ok", "Reminder: soon"), now
        wait_for(lambda: fired(site, soon) or None, "the run-now fire's workflow")
        # A once job that ran and a removed job lose their schedules at the next sync.
        removed = schedule(site, "remove", later)
        assert removed.returncode == 0, removed.stderr
        wait_for(lambda: described(site, later) is None and described(site, once) is None, "the schedules to go")
        listed = temporal(site, "schedule", "list")
        assert f"crab-job-{later}" not in listed.stdout and f"crab-job-{once}" not in listed.stdout
    finally:
        assert serve.stop() in (0, -15), serve.log()
    assert len([r for r in records(site) if r["job_id"] == once]) == 1


def test_a_recurring_job_fires_once_per_fire_across_two_serves_and_never_overlaps(site: Site):
    setup(site)
    marker = site.root / "marker"
    job = add(site, "--prompt", f"run: echo start >> {marker}; sleep 1; echo end >> {marker}", "--every", "2s")
    start_worker(site, "a")
    serves = [start_serve(site, plugins=SCHEDULING, channel="schedule") for _ in range(2)]
    try:
        wait_for(lambda: len([r for r in records(site) if r["job_id"] == job]) >= 2 or None, "two fires")
        shown = wait_for(lambda: described(site, job), "the job's schedule")
        assert shown["schedule"]["policies"]["overlapPolicy"] == "SCHEDULE_OVERLAP_POLICY_SKIP", shown
        assert int(shown["info"]["actionCount"]) >= 2, shown  # the fires were the schedule's actions
    finally:
        for serve in serves:
            assert serve.stop() in (0, -15), serve.log()
        temporal(site, "schedule", "delete", "--schedule-id", f"crab-job-{job}")  # no serve syncs it now
    runs = [r for r in records(site) if r["job_id"] == job]
    lines = marker.read_text().split()
    # A start and an end per fire, in turn: none began before the last ended (a fire cut short by
    # the stop may leave its start alone at the end).
    pairs = len(lines) // 2
    assert lines[: 2 * pairs] == ["start", "end"] * pairs and lines[2 * pairs :] in ([], ["start"]), lines
    # One run per fire, however many crab serve took fires: each ok line of the log ran once.
    ok = [r for r in runs if r["status"] == "ok"]
    assert len(ok) >= 2 and pairs == len(ok), (lines, runs)
    assert len({r["time"] for r in ok}) == len(ok)
    # Each ran as a fire of its Temporal Schedule, not by a crab serve's own poll.
    wait_for(lambda: len(fired(site, job, ended=False)) >= len(ok), "a crab-job workflow per fire")


def test_temporal_away_at_serve_start_is_one_line_and_exit_2(site: Site):
    setup(site)
    config = site.root / "home" / "config.toml"
    config.write_text(config.read_text().replace(f'address = "{site.address}"', 'address = "127.0.0.1:9"'))
    add(site, "--message", "hi", "--in", "1h")
    serve = start_serve(site, plugins=SCHEDULING, channel="schedule")
    assert serve.process.wait(120) == 2, serve.log()
    wait_for(lambda: "cannot reach Temporal at 127.0.0.1:9" in serve.log(), "the line")
    assert "Traceback" not in serve.log(), serve.log()
