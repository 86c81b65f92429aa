"""Turns on a real Temporal dev server with real ``crab worker`` processes: a turn shown like ``crab
run``, Temporal's history free of tool output and secrets, and a worker killed with SIGKILL in
the middle of a tool call that changes things: the turn ends on the other worker, the call ran
once and got crab's stand-in result, every call has exactly one result."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from crab.testing import process_alive
from temporal_site import DEADLINE, PLUGINS, Site, free_port, launch, serving, stop, temporal_binary, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crab-temporal-server")]

STAND_IN = "Interrupted: crab was stopped before this tool call finished."
INTERRUPTED = "Task interrupted before this tool finished."
SECRET = "sk-temporal-test-0123456789abcdef"
HISTORIES = Path(__file__).parent / "histories"


def exported(site: Site, session_id: str) -> list[dict[str, Any]]:
    """The session's entries, read back with ``crab sessions export`` (what the workers stored)."""
    result = subprocess.run(
        [sys.executable, "-m", "crab", "sessions", "export", session_id, "--plugins", PLUGINS],
        cwd=site.workspace,
        env=site.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [json.loads(line) for line in result.stdout.splitlines()[1:]]


def results_per_call(entries: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Every stored call's id with the results stored for it."""
    calls: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        payload = entry["payload"]
        if entry["type"] == "message" and payload.get("role") == "assistant":
            for call in payload.get("tool_calls", []):
                calls[call["id"]] = []
        elif entry["type"] == "tool_result":
            calls.setdefault(payload["call_id"], []).append(payload)
    return calls


def history_json(site: Site, session_id: str) -> str:
    """The workflow's whole history on the server, as JSON (the SDK's format, payloads base64)."""
    binary = temporal_binary()
    assert binary is not None
    command = [binary, "workflow", "show", "-w", f"crab-session-{session_id}", "--address", site.address]
    shown = subprocess.run([*command, "--output", "json"], capture_output=True, text=True, timeout=60, check=True)
    return shown.stdout


def payloads(history: str) -> str:
    """Every payload the history holds, decoded: what Temporal keeps of the turn."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "data" in value and "metadata" in value:
                found.append(base64.b64decode(value["data"]).decode("utf-8", "replace"))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(history))
    return "\n".join(found)


def test_a_turn_runs_on_a_worker_and_shows_like_crab_run(site: Site):
    # One read-only call and one that changes things, then the answer: the client shows the
    # calls and the answer; the session pairs both calls; Temporal's history holds neither the
    # tool's output nor the secret the prompt carried (crab masks it before it travels).
    marker = site.root / "effects"
    # The two bash calls of one reply run at once, as in one process: each waits for the other's
    # start (run one after the other, the first would give up waiting and say "alone").
    meet = site.root / "meet"
    meet.mkdir()
    wait = "for i in $(seq 600); do [ -e {0}/{1} ] && break; sleep 0.1; done; "
    wait += "[ -e {0}/{1} ] && echo together || echo alone"
    site.write_script(
        [
            [
                {"text": "looking"},
                {"tool": "ls", "args": {"path": "."}},
                {"tool": "bash", "args": {"command": f"echo once >> {marker}; echo OUTPUT-4242"}},
                {"tool": "bash", "args": {"command": f"touch {meet}/a; " + wait.format(meet, "b")}},
                {"tool": "bash", "args": {"command": f"touch {meet}/b; " + wait.format(meet, "a")}},
            ],
            [{"text": "all done"}],
        ]
    )
    site.env["DEMO_API_KEY"] = SECRET
    site.start_worker("a")
    result = site.run(f"look around, the key is {SECRET}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["looking", "all done"]
    assert "→ bash(" in result.stderr and "OUTPUT-4242" in result.stderr
    assert marker.read_text().splitlines() == ["once"]
    assert result.stderr.count("together") == 2 and "alone" not in result.stderr

    new = site.run(f"look around, the key is {SECRET}", "-o", "json")
    doc = json.loads(new.stdout)
    assert doc["text"] == "all done" and doc["stop"] == "end" and doc["tool_calls"] == 4
    entries = exported(site, doc["session_id"])
    calls = results_per_call(entries)
    assert len(calls) == 4 and all(len(results) == 1 for results in calls.values()), calls
    # Each model call ran in an activity of its own, yet the session's system prompt (the
    # providers' cached prefix) was gathered and stored once, as in one process.
    prompts = [e for e in entries if e["type"] == "event" and e["payload"].get("kind") == "system_prompt"]
    assert len(prompts) == 1
    history = history_json(site, doc["session_id"])
    kept = payloads(history)
    assert "look around, the key is [redacted]" in kept  # the prompt travels, masked
    assert "OUTPUT-4242" not in kept
    assert SECRET not in kept
    assert SECRET not in json.dumps(entries)

    # The session goes on in a second turn (its script has no third reply: a model failure, exit 1).
    more = site.run("continue", "--session", doc["session_id"])
    assert more.returncode == 1
    assert "error: the script has no reply for model call 3 (it has 2)" in more.stderr
    assert more.stdout == ""
    if os.environ.get("UPDATE_SNAPSHOTS"):
        HISTORIES.mkdir(exist_ok=True)
        (HISTORIES / "turn_with_two_tools.json").write_text(history)


def test_a_models_reply_reaches_temporals_history_and_the_client_masked(site: Site):
    # A hostile (or careless) model repeats a secret it saw: in its text, as a tool's name and in
    # its error. The workflow keeps the reply's text, calls and error (in the activity's result
    # and the turn's), and the client prints the turn's text from the workflow: all masked, as
    # the store keeps them. The whole history is searched, not only its payloads.
    site.write_script(
        [
            [{"text": f"the key is {SECRET}"}, {"tool": f"x{SECRET}", "args": {"a": SECRET}}],
            [{"error": f"refused {SECRET}", "kind": "invalid_request"}],
        ]
    )
    site.env["DEMO_API_KEY"] = SECRET
    site.start_worker("a")
    result = site.run("hello", "-o", "json")
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["text"], doc["error"]) == ("the key is [redacted]", "refused [redacted]")
    assert SECRET not in result.stdout + result.stderr
    history = history_json(site, doc["session_id"])
    kept = payloads(history)
    assert "the key is [redacted]" in kept
    assert SECRET not in history + kept
    assert all(len(results) == 1 for results in results_per_call(exported(site, doc["session_id"])).values())


def test_crab_run_engine_temporal_shows_the_turn_as_crab_run_does(site: Site):
    # crab-core's general contract (crab_turn_engines): `crab run --engine temporal` hands the turn
    # to the workers and crab run's own renderers show it, its -o json document included.
    site.write_script([[{"text": "looking"}, {"tool": "ls", "args": {"path": "."}}], [{"text": "all done"}]])
    site.start_worker("a")

    def crab_run(*args: str) -> subprocess.CompletedProcess[str]:
        command = site.crab("run", "--plugins", PLUGINS, "-m", f"mock/{site.script}", *args)
        return subprocess.run(
            command, cwd=site.workspace, env=site.env, capture_output=True, text=True, timeout=180, check=False
        )

    text = crab_run("--engine", "temporal", "look around")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == ["looking", "all done"]
    assert "→ ls(" in text.stderr
    doc = json.loads(crab_run("--engine", "temporal", "-o", "json", "look around").stdout)
    assert (doc["stop"], doc["text"]) == ("end", "all done")
    assert [call["name"] for call in doc["tool_calls"]] == ["ls"]
    assert all(len(results) == 1 for results in results_per_call(exported(site, doc["session_id"])).values())
    unknown = crab_run("--engine", "nope", "look around")
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines() == ["crab: no turn engine 'nope': the engines available are temporal"]


def test_a_failed_workflow_is_one_line_not_a_traceback(site: Site):
    # The only worker runs in another folder: it refuses the session (not retried), so the
    # workflow itself fails; the client says so in one line, through either command.
    site.write_script([[{"text": "never"}]])
    here, elsewhere = site.workspace, site.root / "elsewhere"
    elsewhere.mkdir()
    site.workspace = elsewhere
    site.start_worker("a")
    site.workspace = here
    for extra in ((), ("--engine", "temporal")):
        if extra:
            command = site.crab("run", "--plugins", PLUGINS, "-m", f"mock/{site.script}", *extra, "hello")
            result = subprocess.run(
                command, cwd=here, env=site.env, capture_output=True, text=True, timeout=180, check=False
            )
        else:
            result = site.run("hello")
        assert result.returncode == 1, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("crab: the turn's workflow failed on Temporal: SessionGone: session "), lines
        assert f"belongs to {here}, and this agent works in {elsewhere}" in lines[0]
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("case", ["prompt-too-large", "unknown-namespace"])
def test_a_turn_temporal_refuses_to_start_is_one_line_not_a_traceback(site: Site, case: str):
    # Temporal refuses the workflow's start: a prompt beyond its payload limit (2 MB here), a
    # namespace it does not have. No worker is needed: the start itself fails.
    site.write_script([[{"text": "never"}]])
    prompt = "x" * 3_000_000 if case == "prompt-too-large" else "hello"
    if case == "unknown-namespace":
        home = Path(site.env["CRAB_HOME"])
        config = (home / "config.toml").read_text()
        (home / "config.toml").write_text(
            config.replace("[plugins.temporal]\n", '[plugins.temporal]\nnamespace = "nope"\n')
        )
    command = site.crab("run", "--plugins", PLUGINS, "-m", f"mock/{site.script}", "--engine", "temporal", "-")
    result = subprocess.run(
        command, input=prompt, cwd=site.workspace, env=site.env, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    if case == "prompt-too-large":
        assert line.startswith("crab: Temporal does not take this turn: the prompt is 3,000,000 characters"), line
        return
    assert line.startswith(f"crab: Temporal at {site.address} has no namespace nope"), line
    # A worker says the same before it says it runs (its SDK's own check failed after, with a traceback).
    worker = subprocess.run(
        site.crab("worker", "--plugins", PLUGINS, "-m", f"mock/{site.script}"),
        cwd=site.workspace,
        env=site.env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert worker.returncode == 2, worker.stderr
    assert worker.stderr.strip().splitlines() == [line]


def test_a_worker_killed_mid_tool_call_leaves_the_turn_to_another_and_the_call_runs_once(site: Site):
    marker = site.root / "effects"
    command = f'echo "$$" >> {marker}; sleep 120; echo late >> {marker}'
    site.write_script([[{"tool": "bash", "args": {"command": command}}], [{"text": "finished"}]])
    workers = {site.start_worker(name).process.pid: name for name in ("a", "b")}
    running = site.start_run("change something")
    try:
        line = wait_for(lambda: marker.exists() and marker.read_text().strip(), "the tool call to start")
        tool_pid = int(line.splitlines()[0])
        owner = _worker_of(tool_pid, workers)
        victim = next(w for w in site.workers if w.name == owner)
        victim.kill()
        os.kill(tool_pid, signal.SIGKILL)  # an orphan of the killed worker's; its effect is already counted
        stdout, stderr = running.communicate(timeout=DEADLINE * 2)
    finally:
        if running.poll() is None:
            os.killpg(running.pid, signal.SIGKILL)
    assert running.returncode == 0, stderr
    assert "finished" in stdout
    assert marker.read_text().splitlines() == [str(tool_pid)]  # ran once: never again on the other worker
    survivor = next(w for w in site.workers if w.name != owner)
    assert survivor.process.poll() is None
    session_id = site.only_session()
    calls = results_per_call(exported(site, session_id))
    assert len(calls) == 1
    [results] = calls.values()
    assert [r["content"] for r in results] == [STAND_IN]
    if os.environ.get("UPDATE_SNAPSHOTS"):
        HISTORIES.mkdir(exist_ok=True)
        (HISTORIES / "turn_after_a_worker_was_killed.json").write_text(history_json(site, session_id))


def _worker_of(pid: int, workers: dict[int, str]) -> str:
    """The worker whose process tree ``pid`` is in (walking parent pids)."""
    current = pid
    while current > 1:
        if current in workers:
            return workers[current]
        stat = Path(f"/proc/{current}/stat").read_text()
        current = int(stat.rsplit(")", 1)[1].split()[1])
    raise AssertionError(f"process {pid} is not under any worker")


def test_ctrl_c_aborts_the_turn_on_its_worker_and_every_call_is_settled(site: Site):
    # Ctrl-C in `crab temporal run` signals the workflow: the running tool activity is cancelled on
    # the worker (its process ended), the call gets crab's interrupted result, the turn is aborted.
    marker = site.root / "effects"
    site.write_script([[{"tool": "bash", "args": {"command": f'echo "$$" >> {marker}; sleep 120'}}], [{"text": "no"}]])
    site.start_worker("a")
    running = site.start_run("wait a long time", "-o", "json")
    try:
        line = wait_for(lambda: marker.exists() and marker.read_text().strip(), "the tool call to start")
        tool_pid = int(line.splitlines()[0])
        running.send_signal(signal.SIGINT)
        stdout, stderr = running.communicate(timeout=DEADLINE)
    finally:
        if running.poll() is None:
            os.killpg(running.pid, signal.SIGKILL)
    # 130 and no traceback, however long the settle takes on the worker: the client waits for it
    # at most SETTLE_WAIT, then says the turn is stopping there and ends as aborted.
    assert running.returncode == 130, stderr
    assert "Traceback" not in stderr and "Timeout (" not in stderr, stderr
    assert json.loads(stdout)["stop"] == "aborted"
    wait_for(lambda: not process_alive(tool_pid), "the tool's process to end")
    session_id = site.only_session()

    def settled() -> list[list[str]]:  # on the worker, once it has settled (maybe after the client's end)
        calls = results_per_call(exported(site, session_id))
        return [[r["content"] for r in results] for results in calls.values()]

    wait_for(lambda: settled() == [[INTERRUPTED]], "the call's interrupted result")
    assert settled() == [[INTERRUPTED]]


def test_steering_sent_to_the_workflow_joins_the_turn_after_the_running_call(site: Site):
    started, go = site.root / "started", site.root / "go"
    command = f"touch {started}; for i in $(seq 600); do [ -e {go} ] && break; sleep 0.1; done; echo waited"
    site.write_script([[{"tool": "bash", "args": {"command": command}}], [{"text": "finished"}]])
    site.start_worker("a")
    running = site.start_run("start something", "-o", "json")
    try:
        wait_for(started.exists, "the tool call to start")
        session_id = site.only_session()
        binary = temporal_binary()
        assert binary is not None
        signal_steer = [binary, "workflow", "signal", "-w", f"crab-session-{session_id}", "--name", "steer"]
        signal_steer += ["--input", json.dumps("also look at the tests"), "--address", site.address]
        subprocess.run(signal_steer, capture_output=True, text=True, timeout=60, check=True)
        go.touch()
        stdout, stderr = running.communicate(timeout=DEADLINE)
    finally:
        if running.poll() is None:
            os.killpg(running.pid, signal.SIGKILL)
    assert running.returncode == 0, stderr
    assert json.loads(stdout)["text"] == "finished"
    messages = [e["payload"] for e in exported(site, session_id) if e["type"] in ("message", "tool_result")]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "start something"),
        ("assistant", ""),
        ("tool", "waited\n[exit code 0]"),
        ("user", "also look at the tests"),
        ("assistant", "finished"),
    ]


def test_a_turn_waits_for_a_worker_says_so_and_runs_once_one_starts(site: Site):
    site.write_script([[{"text": "here I am"}]])
    assert site.script is not None
    log = site.root / "run.stderr"
    command = site.crab("temporal", "run", "--plugins", PLUGINS, "-m", f"mock/{site.script}", "anyone there?")
    with log.open("w") as err:
        running = subprocess.Popen(
            command,
            cwd=site.workspace,
            env=site.env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )
    try:
        notice = wait_for(lambda: "no crab worker" in log.read_text() and log.read_text(), "the no-worker notice")
        site.start_worker("late")
        stdout, _ = running.communicate(timeout=DEADLINE)
    finally:
        if running.poll() is None:
            os.killpg(running.pid, signal.SIGKILL)
    assert running.returncode == 0, log.read_text()
    assert "no crab worker has taken this turn yet: start one with `crab worker`" in notice
    assert f"(task queue {site.task_queue})" in notice
    assert stdout.strip() == "here I am"


def test_temporal_stopped_for_10_s_mid_turn_the_turn_goes_on_and_the_client_waits(site: Site, tmp_path: Path):
    # A server of this test's own, restarted on its port with its state file: the worker and
    # the client reconnect, the tool call the outage cut off gets its stand-in (it may have had its
    # effect: it never runs again), the turn ends, the client shows it.
    folder = tmp_path / "own-server"
    folder.mkdir()
    port = free_port()
    address = f"127.0.0.1:{port}"
    config = site.root / "home" / "config.toml"
    config.write_text(config.read_text().replace(site.address, address))
    site.address = address
    server = launch(folder, port)
    try:
        wait_for(lambda: serving(address), "the test's own server")
        marker, go = site.root / "effects", site.root / "go"
        command = f"echo x >> {marker}; for i in $(seq 600); do [ -e {go} ] && break; sleep 0.1; done"
        site.write_script([[{"tool": "bash", "args": {"command": command}}], [{"text": "survived"}]])
        site.start_worker("a")
        running = site.start_run("keep going", "-o", "json")
        try:
            wait_for(marker.exists, "the tool call to start")
            stop(server)
            time.sleep(10)  # the outage the issue names: ten seconds without Temporal
            server = launch(folder, port)
            wait_for(lambda: serving(address), "the server to come back")
            go.touch()
            stdout, stderr = running.communicate(timeout=DEADLINE * 2)
        finally:
            if running.poll() is None:
                os.killpg(running.pid, signal.SIGKILL)
        assert running.returncode == 0, stderr
        assert json.loads(stdout)["text"] == "survived"
        assert "Traceback" not in stderr
        assert marker.read_text().splitlines() == ["x"]
        calls = results_per_call(exported(site, site.only_session()))
        assert [len(results) for results in calls.values()] == [1]
    finally:
        stop(server)
