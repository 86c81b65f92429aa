"""A scripted model under ``--yolo`` attacks the machine through ``bash``: with the sandbox on
every attack fails and its result says the sandbox refused it; with the sandbox off the same
script succeeds (so each test proves something). Real bwrap, real crab, real servers."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from crab_sandbox import bwrap

pytestmark = [
    pytest.mark.skipif(not bwrap.probe().works, reason=f"no sandbox here: {bwrap.probe().reason}"),
    pytest.mark.xdist_group("sandbox-sleeps"),  # make_crab ends every test's marked sleeps: one worker
]


def test_planted_secrets_in_home_are_not_readable(kit, make_crab):
    for mode in ("on", "off"):
        crab = make_crab(mode)
        key, auth = crab.run(
            "cat ~/.ssh/id_rsa > stolen_key",
            f"cat {crab.crab_home}/auth.json > stolen_auth",  # api-codemod: keep (crab: the test's runner)
        )
        stolen_key = (crab.work / "stolen_key").read_text()
        stolen_auth = (crab.work / "stolen_auth").read_text()
        if mode == "off":
            assert kit.PRIVATE_KEY in stolen_key and kit.AUTH_KEY in stolen_auth
            assert "[sandbox:" not in key
            continue
        assert stolen_key == "" and stolen_auth == ""
        assert "Permission denied" in key and "[sandbox: ~/.ssh is hidden" in key
        assert "[sandbox: ~/.crab/auth.json is hidden" in auth


def test_writes_outside_the_workspace_are_refused_every_way(kit, make_crab):
    for mode in ("on", "off"):
        crab = make_crab(mode)
        out = crab.outside
        (result,) = crab.run(
            f"echo pwned > {out}/absolute.txt; "
            f"echo pwned > ../outside/dotdot.txt; "
            f"ln -s {out}/symlink.txt link && echo pwned > link; "
            f"echo pwned > /proc/self/root{out}/proc.txt; "
            "echo fine > inside.txt"
        )
        written = sorted(p.name for p in out.iterdir())
        assert (crab.work / "inside.txt").read_text() == "fine\n"
        if mode == "off":
            assert written == ["absolute.txt", "dotdot.txt", "proc.txt", "symlink.txt"]
            continue
        assert written == []
        assert result.count("Read-only file system") == 4
        assert "[sandbox: writing outside the workspace is refused (writable: " in result


@pytest.fixture
def server() -> Iterator[int]:
    class Reply(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"reached the host")

        def log_message(self, *args: object) -> None:
            return None

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Reply)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()


def test_the_network_is_off_curl_and_python_sockets(kit, make_crab, server):
    curl = shutil.which("curl")
    for mode in ("on", "off"):
        crab = make_crab(mode)
        commands = [
            "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', "
            f"{server}), 5); s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); "
            "open('got_py', 'wb').write(s.makefile('rb').read())\""
        ]
        if curl:
            commands.append(f"curl -sS --max-time 5 http://127.0.0.1:{server}/ > got_curl")
        results = crab.run(*commands)
        got_py = crab.work / "got_py"
        if mode == "off":
            assert b"reached the host" in got_py.read_bytes()
            if curl:
                assert (crab.work / "got_curl").read_text() == "reached the host"
            continue
        assert not got_py.exists()
        if curl:
            assert (crab.work / "got_curl").read_text() == ""
        for result in results:
            assert "[sandbox: the network is off for this command" in result


def test_secret_variables_are_not_passed_in(kit, make_crab):
    for mode in ("on", "off"):
        crab = make_crab(mode)
        (result,) = crab.run('echo "$DEMO_API_KEY" > leaked; echo "home=$HOME" > kept')
        assert (crab.work / "kept").read_text() == f"home={crab.home}\n"  # ordinary variables stay
        leaked = (crab.work / "leaked").read_text()
        if mode == "off":
            assert leaked == f"{kit.API_KEY}\n"
            continue
        assert leaked == "\n"
        assert "[sandbox: $DEMO_API_KEY not passed into the sandbox" in result


def test_no_process_inside_has_a_secret_in_its_environment(kit, make_crab):
    # bwrap is pid 1 of the sandbox and the command's parent: its own environment shows in
    # /proc/1/environ, /proc/$PPID/environ and ps e, whatever it unsets for its child.
    look = (
        "cat /proc/1/environ /proc/$PPID/environ > parents 2>/dev/null; "
        "for f in /proc/[0-9]*/environ; do cat $f; done > every 2>/dev/null; ps axeww > ps 2>&1; true"
    )
    for mode in ("on", "off"):
        crab = make_crab(mode)
        crab.run(look)
        seen = {name: (crab.work / name).read_bytes() for name in ("parents", "every", "ps")}
        if mode == "off":
            assert kit.API_KEY.encode() in seen["parents"]  # crab's own environment, one level up
            continue
        assert b"HOME=" in seen["parents"] and b"PATH=" in seen["every"]  # the environments were read
        for name, text in seen.items():
            assert kit.API_KEY.encode() not in text and b"DEMO_API_KEY" not in text, name


class UnixDaemon:
    """A host daemon on a unix socket: answers every connection with one line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(8)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"hello from the host daemon\n")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)  # wakes the accept (Linux): the socket is released
        self.server.close()


def _connect(path: Path, into: str) -> str:
    code = (
        "import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
        "open(sys.argv[2], 'w').write(s.recv(100).decode())"
    )
    return f'python3 -c "{code}" {path} {into}'


@pytest.fixture(scope="session")
def daemon_folders() -> Iterator[list[Path]]:
    """Folders outside /tmp for test daemons' sockets, removed when the session ends: long after
    their servers closed, so no crab running beside these tests (which covers every bound socket
    outside /tmp) can meet a socket file removed between its look and its bwrap's start."""
    made: list[Path] = []
    yield made
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_host_daemons_unix_socket_is_covered_unless_let_through(kit, make_crab, daemon_folders):
    base = Path("/var/tmp")  # outside /tmp, as docker.sock or the D-Bus bus is (the sandbox's /tmp is its own)
    if not os.access(base, os.W_OK):
        pytest.skip("/var/tmp is not writable here")
    for mode in ("on", "off", "allowed"):
        crab = make_crab("off" if mode == "off" else "on")
        folder = Path(tempfile.mkdtemp(prefix="crab-sandbox-", dir=base))
        daemon_folders.append(folder)
        daemon = UnixDaemon(folder / "d.sock")
        own = UnixDaemon(crab.work / "own.sock")  # the sandbox's own folder: its sockets work
        if mode == "allowed":
            crab.config(f'[plugins.sandbox]\nmode = "on"\nunix_sockets = ["{daemon.path}"]\n')
        try:
            outside, inside = crab.run(_connect(daemon.path, "got"), _connect(own.path, "own"))
        finally:
            daemon.close()
            own.close()
        assert (crab.work / "own").read_text() == "hello from the host daemon\n", inside
        got = crab.work / "got"
        if mode in ("off", "allowed"):
            assert got.read_text() == "hello from the host daemon\n", outside
            assert "[sandbox:" not in outside
            continue
        assert not got.exists()
        assert f"{daemon.path}: host sockets are covered in the sandbox ([plugins.sandbox] unix_sockets" in outside


def test_a_background_process_ends_with_its_call_and_the_result_says_how_to_keep_one(kit, make_crab):
    for mode in ("on", "off"):
        crab = make_crab(mode)
        proc = crab.start({"command": "sleep 3172 > /dev/null 2>&1 & echo started"}, _hold(crab))
        try:
            kit.wait_until((crab.work / "held").exists, "the second call")
            if mode == "off":
                assert kit.processes_named("sleep 3172")  # lives on into the next call
            else:
                kit.wait_until(lambda: not kit.processes_named("sleep 3172"), "the call's process to end")
            (crab.work / "go").touch()
            out, _ = proc.communicate(timeout=kit.WAIT)
        finally:
            proc.kill()
        first = json.loads(out)["tool_calls"][0]["result"]
        if mode == "off":
            assert "[sandbox:" not in first
            continue
        assert "processes a command leaves running end when it exits" in first, first
        if crab.shell == "tools-basic":
            assert "start it with background: true (bash_output reads it, bash_kill ends it)" in first
        else:
            assert "nothing started in one call runs on into the next" in first


def _hold(crab) -> dict[str, str]:
    """A second call that holds crab until the test writes ``go`` (and says it started)."""
    return {"command": "touch held; for i in $(seq 1200); do [ -e go ] && break; sleep 0.1; done"}


def test_a_fork_bomb_is_bounded_by_the_timeout_escapers_included(kit, make_crab):
    # A bounded bomb (31 shells), each leaf dropping crab's tag and leaving the session: without the
    # sandbox a leaf escapes the call's kill once its parent shell has exited (re-parented to crab,
    # untagged; crab's exit still ends it), while one whose parent still runs is ended with it;
    # inside the sandbox the pid namespace ends every one with the command.
    bomb = (
        "b() { if [ $1 -gt 0 ]; then b $(($1-1)) & b $(($1-1)) & fi; "
        "env -u CRAB_PROCESS_TAG setsid sleep 3170; }; b 4; wait"
    )
    for mode in ("on", "off"):
        crab = make_crab(mode)
        proc = crab.start({"command": bomb, "timeout": 3}, _hold(crab))
        try:
            held = crab.work / "held"
            kit.wait_until(held.exists, "the second call")
            left = kit.processes_named("sleep 3170")
            (crab.work / "go").touch()
            out, _ = proc.communicate(timeout=kit.WAIT)
        finally:
            proc.kill()
        first = json.loads(out)["tool_calls"][0]["result"]
        # Bounded either way: the timeout's kill, or (seen once on a machine at load 10) the call
        # reported as ended by SIGKILL, which the same kill sends after its grace.
        timed_out = "timed out" in first
        assert timed_out or "killed by signal 9" in first, first
        if mode == "off":
            continue  # how many escape depends on timing; crab's exit ends them (the fixture makes sure)
        assert left == []
        if timed_out:
            assert "[sandbox:" in first and "end when it exits" in first


def test_a_process_left_running_dies_with_crab_even_when_crab_is_killed(kit, make_crab):
    for mode in ("on", "off"):
        crab = make_crab(mode)
        proc = crab.start({"command": "setsid nohup sleep 3171 > /dev/null 2>&1 & echo started"}, _hold(crab))
        try:
            held = crab.work / "held"
            kit.wait_until(held.exists, "the second call")
            proc.send_signal(signal.SIGKILL)  # crab dies without cleaning up (OOM killer, kill -9)
            proc.communicate(timeout=kit.WAIT)
        finally:
            proc.kill()
        if mode == "off":
            assert kit.processes_named("sleep 3171")  # orphaned, running on after crab
            continue
        kit.wait_until(lambda: not kit.processes_named("sleep 3171"), "the sandboxed process to end", 10)


def test_ordinary_work_still_works_inside(kit, make_crab):
    crab = make_crab("on")
    (result,) = crab.run(
        "git init -q . && git -c user.email=t@example.com -c user.name=t commit -q --allow-empty -m one "
        "&& git log --oneline | wc -l > commits; "
        "python3 -c \"open('built.txt', 'w').write(str(sum(range(10))))\"; "
        "mkdir -p pkg && echo 'x = 1' > pkg/m.py && python3 -m compileall -q pkg && ls pkg/__pycache__ | wc -l > pyc; "
        "echo scratch > /tmp/scratch && cat /tmp/scratch"
    )
    assert (crab.work / "commits").read_text().strip() == "1"
    assert (crab.work / "built.txt").read_text() == "45"
    assert (crab.work / "pyc").read_text().strip() == "1"
    assert "scratch" in result and "[sandbox:" not in result
