"""``crab`` on the PostgreSQL store as a user drives it: runs, fork, search, and ``crab sessions
migrate`` from Postgres to SQLite to JSONL tapes and back into Postgres with ids, parents,
handoffs and usage unchanged. Needs PostgreSQL's server binaries (installed by .ci/run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CRAB = Path(sys.executable).with_name("crab")
PLUGINS = "provider-mock,tape-jsonl,store-sqlite,store-postgres"
SCRIPT = {
    "replies": [
        [{"text": "Counting pelicans."}, {"usage": {"input_tokens": 120, "output_tokens": 30}}],
        [{"text": "Forty-two pelicans."}, {"usage": {"input_tokens": 200, "output_tokens": 12}}],
    ],
    "loop": False,
}

pytestmark = pytest.mark.slow


def test_sessions_migrate_round_trips_through_postgres(tmp_path: Path, postgres_dsn: str) -> None:
    dsn = postgres_dsn
    if not CRAB.exists():
        pytest.skip(f"no crab command next to {sys.executable}")
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")

    def crab(*args: str, schema: str = "first") -> subprocess.CompletedProcess[str]:
        (home / "config.toml").write_text(
            f'[plugins.store-postgres]\nschema = "{schema}"\n\n[plugins.tape-jsonl]\nroot = "{home / "tapes"}"\n',
            encoding="utf-8",
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
        env.update({"CRAB_HOME": str(home), "CRAB_PLUGINS": PLUGINS, "NO_COLOR": "1", "CRAB_POSTGRES_DSN": dsn})
        done = subprocess.run([str(CRAB), *args], cwd=project, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"crab {' '.join(args)}: {done.stderr}"
        return done

    crab("run", "--store", "postgres", "-m", f"mock/{script}", "count the pelicans")
    listed = json.loads(crab("sessions", "list", "--json", "--store", "postgres").stdout)
    first = listed[0]["id"]
    assert listed[0]["usage"] == {"input_tokens": 120, "output_tokens": 30}
    crab("run", "--store", "postgres", "-m", f"mock/{script}", "--session", first, "and now?")
    crab("sessions", "fork", first, "--store", "postgres")
    assert first in crab("sessions", "search", "PELICANS", "--store", "postgres").stdout
    sessions = json.loads(crab("sessions", "list", "--json", "--store", "postgres").stdout)
    assert len(sessions) == 2

    def export(store: str, session_id: str, schema: str = "first") -> str:
        return crab("sessions", "export", session_id, "--format", "jsonl", "--store", store, schema=schema).stdout

    originals = {s["id"]: export("postgres", s["id"]) for s in sessions}
    assert "copied 2 sessions" in crab("sessions", "migrate", "--from", "postgres", "--to", "sqlite").stdout
    assert "copied 2 sessions" in crab("sessions", "migrate", "--from", "sqlite", "--to", "jsonl").stdout
    done = crab("sessions", "migrate", "--from", "jsonl", "--to", "postgres", schema="second")
    assert "copied 2 sessions" in done.stdout
    again = crab("sessions", "migrate", "--from", "jsonl", "--to", "postgres", schema="second")
    assert "2 already there" in again.stdout
    back = json.loads(crab("sessions", "list", "--json", "--store", "postgres", schema="second").stdout)
    assert [s["id"] for s in back] == [s["id"] for s in sessions]
    for session_id, text in originals.items():
        for store in ("sqlite", "jsonl"):
            assert export(store, session_id) == text
        assert export("postgres", session_id, schema="second") == text
    by_id = {s["id"]: s for s in back}
    assert by_id[first]["usage"] == {"input_tokens": 240, "output_tokens": 60}  # two runs of the first reply
    assert [s["usage"] for s in back] == [s["usage"] for s in sessions]
    fork = next(s for s in back if s["forked_from"])
    assert fork["forked_from"] == first


def test_crab_serve_runs_a_scheduled_job_from_the_postgres_job_store(
    tmp_path: Path, postgres_dsn: str, postgres_schema: str
) -> None:
    """`[plugins.schedule] store = "postgres"`: the CLI adds to the database, two `crab serve
    schedule` workers poll it, the reminder is delivered once, and `crab schedule log` reads it back."""
    if not CRAB.exists():
        pytest.skip(f"no crab command next to {sys.executable}")
    import signal
    import time

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'[crab]\nmodel = "mock/tour"\n\n[plugins.store-postgres]\nschema = "{postgres_schema}"\n\n'
        '[plugins.schedule]\nstore = "postgres"\ntimezone = "UTC"\npoll_interval = 0.2\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(
        {
            "CRAB_HOME": str(home),
            "CRAB_PLUGINS": "schedule,store-postgres,provider-mock",
            "NO_COLOR": "1",
            "CRAB_POSTGRES_DSN": postgres_dsn,
        }
    )

    def crab(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(CRAB), *args], cwd=home, env=env, capture_output=True, text=True, timeout=60)

    added = crab("schedule", "add", "--in", "1s", "--message", "feed the pelicans")
    assert added.returncode == 0, added.stderr
    job_id = added.stdout.split()[1].rstrip(":")
    assert job_id in crab("schedule", "list").stdout
    assert not (home / "schedule.db").exists()  # the jobs are in the database, not in a file
    workers = [
        subprocess.Popen([str(CRAB), "serve", "schedule"], cwd=home, env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            logged = crab("schedule", "log", "--json")
            if logged.returncode == 0 and job_id in logged.stdout:
                break
            time.sleep(0.3)
        time.sleep(1)  # a second delivery, if there were one, would land now
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.communicate(timeout=60)
    records = json.loads(crab("schedule", "log", "--json").stdout)
    mine = [r for r in records if r["job_id"] == job_id]
    assert len(mine) == 1, records
    assert mine[0]["text"] == "Reminder: feed the pelicans" and mine[0]["status"] == "ok"
