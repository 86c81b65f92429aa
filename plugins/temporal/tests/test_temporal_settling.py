"""Ctrl-C (or a channel's abort) while a turn settles slowly on its worker, on a real Temporal dev
server with a real ``crab worker``: a tool whose cancel takes fifteen seconds (in Python; a fake
plugin installed on the worker). ``crab run --engine temporal`` waits ``SETTLE_WAIT`` for the
settle, then says the turn is stopping on its worker and exits 130 in one line, no traceback;
the session's next turn, started at once (by ``crab run``, or a new message to ``crab serve``
over HTTP), waits for that workflow to end instead of being refused; the call has its one
interrupted result."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from temporal_serve_site import configure, install_echo, post, session, start_serve, start_worker, token
from temporal_serve_site import exported as serve_exported
from temporal_serve_site import results_per_call as serve_results_per_call
from temporal_site import DEADLINE, PLUGINS, Site, temporal_binary, wait_for
from test_temporal_turns import INTERRUPTED, STAND_IN, exported, results_per_call

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crab-temporal-server")]

LINGERING = f"{PLUGINS},linger"
LINGER = 15.0
"""Seconds the tool goes on after its cancel: far past the client's wait, on a loaded machine too."""
STOPPING = "the turn is stopping on its worker: its tool calls get their interrupted results there"
BUSY = "the session's previous turn is still ending on its worker"
DUMP = ("Traceback", "Thread 0x", "Timeout (", "Fatal Python error")

LINGER_PLUGIN = f'''
"""A tool for crab-temporal's tests whose cancel is slow: it goes on for {LINGER} s, then gives in."""
import asyncio, os, time
from pathlib import Path

import crab


@crab.tool
async def linger() -> str:
    """Wait five minutes; cancelled, go on for a while (in Python, the GIL free), then give in."""
    Path(os.environ["LINGER_STARTED"]).write_text("started")
    try:
        await asyncio.sleep(300)
    except asyncio.CancelledError:
        end = time.monotonic() + {LINGER}
        while (left := end - time.monotonic()) > 0:
            try:
                await asyncio.sleep(left)
            except asyncio.CancelledError:
                continue
        raise
    return "woke up"


@crab.hookimpl
def crab_tools(config):
    return [linger]
'''


SLOW_BASH = LINGER_PLUGIN.replace("async def linger() -> str:", "async def bash(command: str) -> str:").replace(
    "return [linger]", "return [bash]"
)
"""The same tool as ``bash`` (for crab-temporal's serve tests, whose echo provider calls bash), in
place of crab-tools-basic's."""
SERVING = "serve-echo,store-sqlite,slow-bash,temporal"


def install_linger(site: Site, name: str = "linger", source: str = LINGER_PLUGIN) -> Path:
    """The linger tool as an installed plugin on PYTHONPATH; the file it writes when it starts."""
    module = f"crab_{name.replace('-', '_')}"
    folder = site.root / f"{name}-site"
    folder.mkdir(exist_ok=True)
    (folder / f"{module}.py").write_text(source)
    dist = folder / f"{module}-0.0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: crab-{name}\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text(f"[crab]\n{name} = {module}\n")
    site.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), site.env.get("PYTHONPATH")]))
    started = site.root / "linger-started"
    site.env["LINGER_STARTED"] = str(started)
    return started


def engine_run(site: Site, *args: str) -> subprocess.Popen[str]:
    """``crab run --engine temporal`` (plain output), its own process group."""
    assert site.script is not None
    command = site.crab("run", "--plugins", LINGERING, "-m", f"mock/{site.script}", "--engine", "temporal", *args)
    return subprocess.Popen(
        command,
        cwd=site.workspace,
        env=site.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finished(process: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return process.communicate(timeout=DEADLINE)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)


def status(site: Site, session_id: str) -> str:
    binary = temporal_binary()
    assert binary is not None
    command = [binary, "workflow", "describe", "-w", f"crab-session-{session_id}", "--address", site.address]
    shown = subprocess.run([*command, "-o", "json"], capture_output=True, text=True, timeout=60, check=False)
    return str(json.loads(shown.stdout)["workflowExecutionInfo"]["status"]) if shown.returncode == 0 else ""


def test_ctrl_c_ends_the_client_in_time_while_the_turn_settles_and_the_next_turn_waits_for_it(site: Site):
    started = install_linger(site)
    site.write_script([[{"tool": "linger", "args": {}}], [{"text": "after the stop"}]])
    site.start_worker("a", plugins=LINGERING)
    first = engine_run(site, "wait a long time")
    try:
        wait_for(lambda: started.exists() or first.poll() is not None, "the tool call to start")
        assert first.poll() is None, first.communicate()
        first.send_signal(signal.SIGINT)
        sent = time.monotonic()
    finally:
        _, stderr = finished(first)
    print(f"Ctrl-C to exit: {time.monotonic() - sent:.2f} s")  # a figure for the report (-s), not a claim
    assert first.returncode == 130, stderr
    for dump in DUMP:
        assert dump not in stderr, stderr
    assert STOPPING in stderr, stderr
    assert stderr.splitlines()[-1] == "crab: interrupted", stderr
    session_id = site.only_session()
    # What the next turn meets: the aborted turn's workflow, still settling on the worker.
    assert status(site, session_id) == "WORKFLOW_EXECUTION_STATUS_RUNNING"
    second = engine_run(site, "--session", session_id, "go on")
    stdout, stderr = finished(second)
    assert second.returncode == 0, stderr
    assert BUSY in stderr, stderr
    assert "after the stop" in stdout, stdout
    calls = results_per_call(exported(site, session_id))
    # Interrupted where it ran: the worker's loop records its stand-in as the cancel lands (the
    # tool raised it), or the settle its interrupted result; one either way.
    [results] = calls.values()
    assert [r["content"] for r in results] in ([STAND_IN], [INTERRUPTED]), results


def test_abort_from_http_then_a_new_message_at_once_runs_once_the_aborted_turn_has_settled(site: Site):
    install_echo(site)
    started = install_linger(site, "slow-bash", SLOW_BASH)
    configure(site)
    key = token(site, "laptop", SERVING)
    start_worker(site, "a", plugins=SERVING)
    serve = start_serve(site, plugins=SERVING)
    try:
        session_id = session(serve.url, key)
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(post, serve.url, key, session_id, "run: wait a long time")
            wait_for(started.exists, "the tool call to start")
            with httpx.Client(timeout=DEADLINE) as client:
                aborted = client.post(
                    f"{serve.url}/v1/sessions/{session_id}/abort", headers={"Authorization": f"Bearer {key}"}
                )
            assert aborted.json() == {"aborted": True}
            events = running.result(timeout=DEADLINE * 2)
        assert events[-1]["type"] == "turn_end" and events[-1]["stop"] == "aborted", events
        # The channel has its end; the workflow still settles on the worker, and the next message comes now.
        assert status(site, session_id) == "WORKFLOW_EXECUTION_STATUS_RUNNING"
        after = post(serve.url, key, session_id, "and now?")
    finally:
        assert serve.stop() == 0, serve.log()
    assert after[-1]["type"] == "turn_end" and after[-1]["stop"] == "end", after
    assert after[-1]["text"] == "heard: and now?", after
    assert list(serve_results_per_call(serve_exported(site, session_id, "serve-echo,store-sqlite")).values()) == [1]
