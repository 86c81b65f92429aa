"""``crab serve`` on Temporal (``[serve] engine = "temporal"``) on the real dev server, with real
``crab worker`` processes and a real ``crab serve http``: a turn from HTTP runs on the workers and
streams the event kinds an in-process turn streams, in the same order; twenty clients at once
each get their own turn's reply, with no cross-talk and one result per call; abort from HTTP
stops the turn where it runs; steering (a second message while the turn runs) joins the turn on
the workers; a worker's permission question is asked on the HTTP stream and answered there;
Temporal unreachable ends that turn with one line, and crab serve goes on."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from crab.testing import process_alive
from temporal_serve_site import (
    configure,
    conversation,
    exported,
    install_echo,
    kinds,
    post,
    results_per_call,
    session,
    start_serve,
    start_worker,
    text_of,
    token,
)
from temporal_site import DEADLINE, Site, free_port, temporal_binary, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crab-temporal-server")]

SESSIONS = 20


def test_a_turn_from_http_runs_on_a_worker_and_streams_as_an_in_process_turn(site: Site):
    install_echo(site)
    configure(site, engine=False)
    key = token(site, "laptop")
    here = start_serve(site)
    try:
        local = post(here.url, key, session(here.url, key), "run: echo in-process")
    finally:
        assert here.stop() == 0, here.log()
    configure(site)  # the same, with [serve] engine = "temporal"
    start_worker(site, "a")
    there = start_serve(site)
    try:
        session_id = session(there.url, key)
        remote = post(there.url, key, session_id, "run: echo on $WORKER_NAME")
    finally:
        assert there.stop() == 0, there.log()
    assert kinds(remote) == kinds(local), (remote, local)
    assert kinds(remote)[0] == "turn_start" and kinds(remote)[-1] == "turn_end"
    assert text_of(local) == "running echo in-processdone: in-process"
    # The tool ran on the worker (its environment names it), not in crab serve.
    assert text_of(remote) == "running echo on $WORKER_NAMEdone: on a"
    assert remote[-1]["stop"] == "end" and remote[-1]["text"] == "done: on a"
    assert conversation(exported(site, session_id, "serve-echo,store-sqlite")) == [
        ("user", "run: echo on $WORKER_NAME"),
        ("assistant", "running echo on $WORKER_NAME"),
        ("tool", "on a\n[exit code 0]"),
        ("assistant", "done: on a"),
    ]


def test_twenty_http_clients_at_once_each_get_their_own_turn(site: Site):
    install_echo(site)
    configure(site)
    key = token(site, "laptop")
    for name in ("a", "b"):
        start_worker(site, name)
    serve = start_serve(site)
    try:
        ids = [session(serve.url, key) for _ in range(SESSIONS)]

        def one(n: int) -> list[dict[str, Any]]:
            return post(serve.url, key, ids[n], f"run: echo client-{n} $WORKER_NAME")

        with ThreadPoolExecutor(SESSIONS) as pool:
            streams = list(pool.map(one, range(SESSIONS)))
    finally:
        assert serve.stop() == 0, serve.log()
    assert "Traceback" not in serve.log()
    ran_on: dict[str, int] = {}
    for n, events in enumerate(streams):
        ends = [e for e in events if e["type"] == "turn_end"]
        assert len(ends) == 1 and ends[0]["stop"] == "end", events
        worker = str(ends[0]["text"]).rsplit(" ", 1)[-1]
        assert worker in ("a", "b") and ends[0]["text"] == f"done: client-{n} {worker}", events
        ran_on[worker] = ran_on.get(worker, 0) + 1
        assert ends[0]["session_id"] == ids[n]
        assert {e.get("session_id") for e in events if "session_id" in e} == {ids[n]}
        assert text_of(events) == f"running echo client-{n} $WORKER_NAMEdone: client-{n} {worker}"
        entries = exported(site, ids[n], "serve-echo,store-sqlite")
        assert conversation(entries) == [
            ("user", f"run: echo client-{n} $WORKER_NAME"),
            ("assistant", f"running echo client-{n} $WORKER_NAME"),
            ("tool", f"client-{n} {worker}\n[exit code 0]"),
            ("assistant", f"done: client-{n} {worker}"),
        ]
        assert list(results_per_call(entries).values()) == [1]
    print(f"tool calls per worker: {ran_on}")  # a figure for the report (-s), not a claim


def test_abort_from_http_stops_the_turn_on_its_worker(site: Site):
    install_echo(site)
    configure(site)
    key = token(site, "laptop")
    marker = site.root / "started"
    start_worker(site, "a")
    serve = start_serve(site)
    try:
        session_id = session(serve.url, key)
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(post, serve.url, key, session_id, f'run: echo "$$" > {marker}; sleep 120')
            pid = int(wait_for(lambda: marker.exists() and marker.read_text().strip(), "the tool call to start"))
            with httpx.Client(timeout=DEADLINE) as client:
                aborted = client.post(
                    f"{serve.url}/v1/sessions/{session_id}/abort", headers={"Authorization": f"Bearer {key}"}
                )
            assert aborted.json() == {"aborted": True}
            events = running.result(timeout=DEADLINE * 2)
    finally:
        assert serve.stop() == 0, serve.log()
    assert events[-1]["type"] == "turn_end" and events[-1]["stop"] == "aborted", events
    wait_for(lambda: not process_alive(pid), "the tool's process to end")
    # The channel's turn ends after SETTLE_WAIT at most; the call settles on the worker, maybe later.
    wait_for(
        lambda: list(results_per_call(exported(site, session_id, "serve-echo,store-sqlite")).values()) == [1],
        "the settle",
    )
    entries = exported(site, session_id, "serve-echo,store-sqlite")
    assert list(results_per_call(entries).values()) == [1]
    assert json.dumps(entries).count("Task interrupted before this tool finished.") == 1


def test_steering_while_a_turn_runs_on_a_worker_joins_that_turn(site: Site):
    install_echo(site)
    configure(site)
    folder = site.root / "files"
    folder.mkdir()
    site.env["FILES_CHANNEL_DIR"] = str(folder)
    started, go = site.root / "started", site.root / "go"
    start_worker(site, "a")
    serve = start_serve(site, channel="files")
    try:
        wait_for((folder / "ready").exists, "the files channel")
        command = f"touch {started}; for i in $(seq 600); do [ -e {go} ] && break; sleep 0.1; done; echo waited"
        (folder / "x.1.in").write_text(f"run: {command}")
        wait_for(started.exists, "the tool call to start on the worker")
        (folder / "x.2.in").write_text("steer:and say hi")
        wait_for((folder / "x.2.queued").exists, "the steering to be queued")
        session_id = (folder / "x.1.started").read_text()
        wait_for(lambda: _signalled(site, session_id, "steer"), "the steer signal to reach the workflow")
        go.touch()
        turn = json.loads(wait_for(lambda: _read(folder / "x.1.out"), "the turn's end"))
        steering = json.loads(wait_for(lambda: _read(folder / "x.2.out"), "the steering's answer"))
    finally:
        assert serve.stop() == 0, serve.log()
    assert turn == {"stop": "end", "text": "heard: and say hi"}
    assert steering == turn  # answered by the turn it joined, not a turn of its own
    entries = exported(site, session_id, "serve-echo,store-sqlite")
    assert conversation(entries) == [
        ("user", f"run: {command}"),
        ("assistant", f"running {command}"),
        ("tool", "waited\n[exit code 0]"),
        ("user", "and say hi"),
        ("assistant", "heard: and say hi"),
    ]


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _signalled(site: Site, session_id: str, name: str) -> bool:
    """Whether the session's workflow history holds a signal ``name``."""
    binary = temporal_binary()
    assert binary is not None
    command = [binary, "workflow", "show", "-w", f"crab-session-{session_id}", "--address", site.address]
    shown = subprocess.run([*command, "--output", "json"], capture_output=True, text=True, timeout=60, check=False)
    return any(
        event.get("workflowExecutionSignaledEventAttributes", {}).get("signalName") == name
        for event in (json.loads(shown.stdout).get("events", []) if shown.returncode == 0 else [])
    )


def test_temporal_unreachable_ends_that_turn_with_one_line_and_crab_serve_goes_on(site: Site):
    install_echo(site)
    configure(site)
    config = site.root / "home" / "config.toml"
    closed = f"127.0.0.1:{free_port()}"  # nothing listens there
    config.write_text(config.read_text().replace(site.address, closed))
    key = token(site, "laptop")
    serve = start_serve(site)
    try:
        session_id = session(serve.url, key)
        events = post(serve.url, key, session_id, "run: echo hi")
        again = post(serve.url, key, session_id, "run: echo hi")  # the next turn tries again
    finally:
        assert serve.stop() == 0, serve.log()
    line = (
        f"cannot reach Temporal at {closed} (connection refused): start one with `crab temporal dev`"
        " or set [plugins.temporal] address"
    )
    for stream in (events, again):
        assert [e["type"] for e in stream] == ["error", "turn_end"], stream
        assert stream[0]["message"] == line
        assert (stream[1]["stop"], stream[1]["error"]) == ("error", line)
    assert "Traceback" not in serve.log()


@pytest.mark.parametrize("answer", ["once", "deny"])
def test_a_workers_permission_question_is_asked_on_the_http_stream_and_answered_there(site: Site, answer: str):
    # The worker runs in ask mode: its bash call's question goes through the workflow to crab
    # serve, which asks the HTTP client streaming the turn (the channel's own question path).
    install_echo(site)
    configure(site, yolo=False)
    key = token(site, "laptop")
    marker = site.root / "effects"
    start_worker(site, "a", yolo=False)
    serve = start_serve(site)
    asked: list[dict[str, Any]] = []

    def decide(event: dict[str, Any]) -> str:
        asked.append(event)
        return answer

    try:
        session_id = session(serve.url, key)
        events = post(serve.url, key, session_id, f"run: echo once $WORKER_NAME >> {marker}", answer=decide)
    finally:
        assert serve.stop() == 0, serve.log()
    assert [(e["tool"], e["permission"]) for e in asked] == [("bash", "exec")]
    assert kinds(events).index("permission_request") < kinds(events).index("tool_result")
    assert events[-1]["type"] == "turn_end" and events[-1]["stop"] == "end", events
    results = [e for e in events if e["type"] == "tool_result"]
    assert len(results) == 1
    if answer == "once":
        assert marker.read_text() == "once a\n"  # on the worker, once
        assert events[-1]["text"] == "done: (no output)"
    else:
        assert not marker.exists()
        assert results[0]["is_error"] and "refused" in results[0]["content"]
    assert list(results_per_call(exported(site, session_id, "serve-echo,store-sqlite")).values()) == [1]
