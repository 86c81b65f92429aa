"""Processes started outside a tool call on an agent's behalf (an MCP stdio server, as crab-mcp
starts one) run inside the sandbox when ``mcp_servers`` says so, and a background shell runs
inside it like every ``bash`` command."""

from __future__ import annotations

import importlib.util
import subprocess

import pytest
from crab_sandbox import bwrap

pytestmark = [
    pytest.mark.skipif(not bwrap.probe().works, reason=f"no sandbox here: {bwrap.probe().reason}"),
    pytest.mark.xdist_group("sandbox-sleeps"),  # make_crab ends every test's marked sleeps: one worker
]

PEEK = 'cat "$HOME/.ssh/id_rsa" > seen.txt 2>&1; echo "status $?" >> seen.txt'


def start_server(crab, command: str, config: str, permission: str = "read") -> str:
    """One ``crab run`` whose start-up starts the fake server; returns what ``server.status`` says."""
    crab.config(config)
    crab.env["CRAB_PLUGINS"] = "scripted,fakeserver," + crab.env["CRAB_PLUGINS"].split(",", 1)[1]
    crab.env["SANDBOX_FAKE_SERVER"] = command
    crab.env["SANDBOX_FAKE_SERVER_PERMISSION"] = permission
    crab.run("true")
    return (crab.work / "server.status").read_text()


@pytest.mark.parametrize("inside", [True, False])
def test_a_server_runs_inside_only_when_mcp_servers_is_on(kit, make_crab, inside):
    crab = make_crab("on")
    # The fake server's plugin is listed before the sandbox: the sandbox's start-up still runs first.
    status = start_server(crab, PEEK, f'[plugins.sandbox]\nmode = "on"\nmcp_servers = {str(inside).lower()}\n')
    assert status == "exit 0"
    seen = (crab.work / "seen.txt").read_text()
    if inside:
        assert kit.PRIVATE_KEY not in seen and "Permission denied" in seen
    else:
        assert kit.PRIVATE_KEY in seen  # the test proves something: outside, the key is there


def test_a_server_gets_the_network_only_with_its_network_permission(make_crab):
    import http.server
    import threading

    class Reply(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"reached the host")

        def log_message(self, *args: object) -> None:
            return None

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Reply)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    fetch = (
        "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', "
        f"{port}), 5); s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); "
        "open('got', 'wb').write(s.makefile('rb').read())\""
    )
    try:
        for permission in ("read", "network"):
            crab = make_crab("on")
            start_server(crab, fetch, "[plugins.sandbox]\nmcp_servers = true\n", permission)
            got = crab.work / "got"
            if permission == "network":
                assert b"reached the host" in got.read_bytes()
            else:
                assert not got.exists()
    finally:
        httpd.shutdown()


def test_required_refuses_a_server_when_the_sandbox_cannot_start(make_crab):
    crab = make_crab("on")
    broken = '[plugins.sandbox]\nmode = "required"\nbwrap = "/nonexistent/bwrap"\nmcp_servers = true\n'
    status = start_server(crab, "touch ran", broken)
    assert status.startswith("refused: [plugins.sandbox] mode is required and the sandbox cannot start: ")
    assert not (crab.work / "ran").exists()


@pytest.mark.skipif(not importlib.util.find_spec("crab_tools_basic"), reason="background shells are crab-tools-basic's")
def test_a_background_shell_runs_inside_the_sandbox(kit, make_crab):
    crab = make_crab("on")
    replies = [
        [{"tool": "bash", "args": {"command": f"{PEEK}; touch finished", "background": True}}],
        [{"tool": "bash", "args": {"command": "while [ ! -e finished ]; do sleep 0.05; done"}}],
        [{"tool": "bash_output", "args": {"job_id": "job-1"}}],
        [{"text": "done"}],
    ]
    script = crab.site.script(replies, loop=True, file=crab.root / "background.json")
    argv = [*crab.argv([])[:-2], f"scripted/{script}", "go"]
    done = subprocess.run(argv, env=crab.env, cwd=crab.work, capture_output=True, text=True, timeout=kit.WAIT * 2)
    assert done.returncode == 0, done.stderr
    seen = (crab.work / "seen.txt").read_text()
    assert kit.PRIVATE_KEY not in seen and "Permission denied" in seen
