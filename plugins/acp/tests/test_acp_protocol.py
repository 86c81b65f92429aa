"""``crab acp`` as a process: malformed input is answered, never fatal; stdout holds only the
protocol; a client that goes away mid-turn (or a SIGTERM) ends crab and every process it started."""

from __future__ import annotations

import asyncio
import json
import select
import signal
import subprocess
import sys
import time
from typing import Any

import acp

MALFORMED = [
    (b"this is not json", None, -32700),
    (b"[1, 2]", None, -32600),
    (b"42", None, -32600),
    (b'{"jsonrpc": "2.0", "id": 7}', 7, -32600),
    (b'{"jsonrpc": "1.0", "id": 8, "method": "initialize"}', 8, -32600),
    (b'{"jsonrpc": "2.0", "id": 9, "method": "no/such/method", "params": {}}', 9, -32601),
    (b'{"jsonrpc": "2.0", "id": 10, "method": "initialize", "params": "bad"}', 10, -32600),
    (b'{"jsonrpc": "2.0", "id": 11, "method": "session/new", "params": {"mcpServers": []}}', 11, -32602),
    (b'{"jsonrpc":"2.0", "id": 12, "method": "session/prompt", "params": {"sessionId": "x","prompt": []}}', 12, -32602),
    (b'{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nope"}}', None, None),
    (b'{"jsonrpc": "2.0", "id": 99, "result": {}}', None, None),  # an answer to nothing: ignored
]


def test_acp_malformed_messages_are_answered_and_the_server_goes_on(crab_acp: Any) -> None:
    process = subprocess.Popen(
        [sys.executable, *crab_acp.argv(crab_acp.script([{"text": "hi"}]))],
        env=crab_acp.env,
        cwd=crab_acp.work,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,  # unbuffered: select() then sees every line that arrived
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        for line, _, _ in MALFORMED:
            process.stdin.write(line + b"\n")
        last = {"jsonrpc": "2.0", "id": 100, "method": "initialize", "params": {"protocolVersion": 1}}
        process.stdin.write(json.dumps(last).encode() + b"\n")
        answers: list[dict[str, Any]] = []
        wanted = sum(1 for _, _, code in MALFORMED if code is not None) + 1
        deadline = time.monotonic() + 60
        while len(answers) < wanted:
            ready, _, _ = select.select([process.stdout], [], [], max(deadline - time.monotonic(), 0))
            assert ready, f"no answer within 60 s; got {answers}"
            raw = process.stdout.readline()
            assert raw, f"crab acp ended early: {process.stderr.read() if process.stderr else ''}"
            answers.append(json.loads(raw))  # every stdout line is a protocol message
    finally:
        process.stdin.close()
        code = process.wait(timeout=60)
    errors = [(a.get("id"), a["error"]["code"]) for a in answers if "error" in a]
    expected = [(ident, code) for _, ident, code in MALFORMED if code is not None]
    assert sorted(errors, key=str) == sorted(expected, key=str)
    assert next(a for a in answers if a.get("id") == 100)["result"]["agentInfo"]["name"] == "crab"
    assert code == 0
    assert "answered a malformed message" in crab_acp.log()


def _long_turn(crab_acp: Any, editor: Any, marker: str, end: str) -> tuple[int, int]:
    """Start a turn running a long command, then end the client's side as ``end`` says; the
    crab process's pid and exit code."""
    model = crab_acp.script([{"tool": "long_command", "args": {"marker": marker}}], [{"text": "never"}])

    async def go() -> tuple[int, int]:
        async with crab_acp.connect(model, editor) as (conn, process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=crab_acp.capabilities())
            session = (await conn.new_session(cwd=str(crab_acp.work), mcp_servers=[])).session_id
            await conn.set_session_mode(session_id=session, mode_id="yolo")
            turn = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[acp.text_block("go")]))
            await crab_acp.wait_for(lambda: crab_acp.processes_with(marker), "the long command to start")
            if end == "disconnect":
                process.stdin.close()  # the editor closed the pipe (or crashed)
            else:
                process.send_signal(signal.SIGTERM)  # the editor stopped the agent
            code = await asyncio.wait_for(process.wait(), 60)
            turn.cancel()
            return process.pid, code

    return crab_acp.run(go())


def test_acp_client_disconnect_mid_turn_ends_crab_and_its_processes(crab_acp: Any, editor: Any) -> None:
    marker = f"acp-gone-{crab_acp.root.name}"
    pid, code = _long_turn(crab_acp, editor, marker, "disconnect")
    assert code == 0
    assert not crab_acp.alive(pid)
    crab_acp.wait_until(lambda: not crab_acp.processes_with(marker), "the long command to end", 30)
    # No session data lost: the aborted call's result was stored before crab exited.
    (stored,) = (crab_acp.crab_home / "filestore").glob("*.jsonl")
    entries = [json.loads(line) for line in stored.read_text().splitlines()[1:]]
    assert [e["type"] for e in entries if e["type"] in ("message", "tool_result")][-1] == "tool_result"
    assert "the client closed the connection" in crab_acp.log()


def test_acp_sigterm_mid_turn_ends_crab_and_its_processes(crab_acp: Any, editor: Any) -> None:
    marker = f"acp-term-{crab_acp.root.name}"
    pid, code = _long_turn(crab_acp, editor, marker, "sigterm")
    assert code == 128 + signal.SIGTERM
    assert not crab_acp.alive(pid)
    crab_acp.wait_until(lambda: not crab_acp.processes_with(marker), "the long command to end", 30)


def test_acp_a_bad_flag_is_one_line_and_exit_2(crab_acp: Any) -> None:
    done = subprocess.run(
        [sys.executable, *crab_acp.argv(crab_acp.script([{"text": "x"}]), "--store", "nosuch")],
        env=crab_acp.env,
        cwd=crab_acp.work,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""  # stdout is the protocol's, even for an error
    assert done.stderr.strip().count("\n") == 0 and "nosuch" in done.stderr
    assert "Traceback" not in done.stderr
