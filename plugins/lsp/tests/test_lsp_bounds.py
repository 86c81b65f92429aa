"""A language server that hangs, dies or is missing is bounded and started again, as crab-mcp's
servers are; a path outside the workspace is refused. Real processes throughout: the hanging
server is a script that reads and never answers, the dying one a real ``ruff server`` killed."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from crab.events import ToolResultEvent
from crab.testing import AgentHarness
from crab_lsp import LspPlugin
from lsp_support import FakeWrite, server_table

DEADLINE = 30.0


def _harness(plugin: LspPlugin, servers: dict[str, object], replies: list[object], workspace: Path, **more: object):
    config: dict[str, object] = {"plugins.lsp.servers": servers, **more}
    return AgentHarness(
        replies, plugins={"lsp": plugin, "fake": FakeWrite(workspace)}, config=config, workspace=workspace
    )


def _gone(pid: int) -> bool:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_server_that_never_answers_is_ended_at_its_timeout(tmp_path):
    pid_file = tmp_path / "pid"
    script = tmp_path / "hang.py"
    script.write_text(
        f"import os, sys\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\nsys.stdin.buffer.read()\n"
    )
    (tmp_path / "a.py").write_text("x = 1\n")
    replies = [[{"tool": "diagnostics", "args": {"path": "a.py"}}], [{"text": "d"}]]
    servers = {"hang": {"command": sys.executable, "args": [str(script)], "patterns": ["*.py"]}}
    harness = _harness(LspPlugin(), servers, replies, tmp_path, **{"plugins.lsp.request_timeout": 1.0})
    try:
        harness.run("check")
        [result] = harness.events_of(ToolResultEvent)
        assert result.is_error
        assert result.content == "language server hang is down: it did not answer initialize within 1 s and was ended"
        assert _gone(int(pid_file.read_text()))
    finally:
        harness.close()


def test_a_server_that_dies_is_started_again_on_the_next_use(ruff, tmp_path):
    (tmp_path / "a.py").write_text("import os\n")
    plugin = LspPlugin()
    replies = [
        [{"tool": "diagnostics", "args": {"path": "a.py"}}],
        [{"tool": "diagnostics", "args": {"path": "a.py"}}],
        [{"text": "d"}],
    ]
    harness = _harness(plugin, {"ruff": server_table(ruff, ["*.py"])}, replies[2:], tmp_path)
    try:
        assert plugin.lsp is not None
        first = harness.run_async(plugin.lsp.diagnostics("a.py", wait=DEADLINE))
        assert "F401" in first
        server = plugin.lsp.servers._running["ruff"]
        assert server._process is not None
        os.kill(server._process.pid, signal.SIGKILL)
        end = time.monotonic() + DEADLINE
        while server.alive and time.monotonic() < end:  # the loop notices the exit
            harness.run_async(asyncio.sleep(0.05))
        assert not server.alive
        (tmp_path / "a.py").write_text("import sys\n")
        second = harness.run_async(plugin.lsp.diagnostics("a.py", wait=DEADLINE))
        assert "`sys` imported but unused" in second
        assert plugin.lsp.servers.started == 2
    finally:
        harness.close()


def test_a_missing_server_is_one_line_and_is_not_started_forever(tmp_path):
    calls = []
    for name in "abcd":  # four files: the loop guard stops a call repeated as it is
        (tmp_path / f"{name}.py").write_text("x = 1\n")
        calls.append([{"tool": "diagnostics", "args": {"path": f"{name}.py"}}])
    servers = {"nope": {"command": str(tmp_path / "no-such-server"), "patterns": ["*.py"]}}
    plugin = LspPlugin()
    harness = _harness(plugin, servers, [*calls, [{"text": "d"}]], tmp_path)
    try:
        harness.run("check")
        results = harness.events_of(ToolResultEvent)
        assert all(r.is_error for r in results)
        assert results[0].content.startswith("language server nope is down: cannot start ")
        assert "3 starts failed in a row" in results[3].content
        assert "fix [plugins.lsp.servers.nope]" in results[3].content
        assert plugin.lsp is not None and plugin.lsp.servers.started == 3
    finally:
        harness.close()


def test_a_path_outside_the_workspace_is_refused(ruff, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret.py").write_text("x = 1\n")
    replies = [[{"tool": "symbols", "args": {"path": "../secret.py"}}], [{"text": "d"}]]
    plugin = LspPlugin()
    harness = _harness(plugin, {"ruff": server_table(ruff, ["*.py"])}, replies, work)
    try:
        harness.run("look")
        [result] = harness.events_of(ToolResultEvent)
        assert result.is_error and result.content.startswith("../secret.py is outside the workspace")
        assert plugin.lsp is not None and plugin.lsp.servers.started == 0
    finally:
        harness.close()


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"patterns": ["*.py"]}, "plugins.lsp.servers.x.command"),
        ({"command": "ruff", "patterns": []}, "plugins.lsp.servers.x.patterns"),
        ({"command": "ruff", "patterns": ["*.py"], "env": {}}, "plugins.lsp.servers.x.env"),
    ],
)
def test_a_malformed_server_table_is_rejected_naming_its_key(table, key):
    from crab import InvalidValue
    from crab_lsp.settings import check_servers

    with pytest.raises(InvalidValue) as caught:
        check_servers({"servers": {"x": table}})
    assert ".".join(caught.value.key) == key


def test_a_fifo_or_a_folder_is_refused_never_read(ruff, tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "pkg.py").mkdir()
    plugin = LspPlugin()
    harness = _harness(plugin, {"ruff": server_table(ruff, ["*.py"])}, [[{"text": "d"}]], tmp_path)
    try:
        assert plugin.lsp is not None
        said = harness.run_async(plugin.lsp.after_edit("pipe.py"))
        assert said == "pipe.py is not a regular file"
        assert harness.run_async(plugin.lsp.after_edit("pkg.py")) == "pkg.py is a folder; give a file"
        assert plugin.lsp.servers.started == 0
    finally:
        harness.close()


def test_each_workspace_has_its_own_servers(ruff, tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    for folder in (first, second):
        folder.mkdir()
        (folder / "a.py").write_text("import os\n")
    plugin = LspPlugin()
    harness = _harness(plugin, {"ruff": server_table(ruff, ["*.py"])}, [[{"text": "d"}]], first)
    try:
        one, two = plugin.for_workspace(first), plugin.for_workspace(second)
        assert one is not None and two is not None and one is not two
        assert plugin.for_workspace(first / ".") is one
        for lsp in (one, two):
            assert "F401" in harness.run_async(lsp.diagnostics("a.py", wait=DEADLINE))
            assert lsp.servers.started == 1
        assert (one.servers._running["ruff"].workspace, two.servers._running["ruff"].workspace) == (
            first.resolve(),
            second.resolve(),
        )
    finally:
        harness.close()


@pytest.mark.parametrize("settle", [0.0, 5.0])
def test_settle_waits_for_diagnostics_a_server_sends_in_parts(tmp_path, settle):
    (tmp_path / "a.ts").write_text("let x = 1\n")
    script = Path(__file__).parent / "lsp_parts_server.py"
    servers = {"parts": {"command": sys.executable, "args": [str(script)], "patterns": ["*.ts"], "settle": settle}}
    plugin = LspPlugin()
    harness = _harness(plugin, servers, [[{"text": "d"}]], tmp_path, **{"plugins.lsp.diagnostics_wait": 60.0})
    try:
        assert plugin.lsp is not None
        said = harness.run_async(plugin.lsp.diagnostics("a.ts"))
        if settle:
            assert said == "parts diagnostics for a.ts (1 error):\na.ts:1:1: error: types came later [parts]"
        else:
            assert said == ""  # the first part, empty: what crab showed before settle
    finally:
        harness.close()


def test_a_server_that_dies_while_crab_waits_for_diagnostics_is_one_line(tmp_path):
    (tmp_path / "a.ts").write_text("let x = 1\n")
    script = Path(__file__).parent / "lsp_parts_server.py"
    servers = {"dies": {"command": sys.executable, "args": [str(script), "--die"], "patterns": ["*.ts"]}}
    plugin = LspPlugin()
    harness = _harness(plugin, servers, [[{"text": "d"}]], tmp_path, **{"plugins.lsp.diagnostics_wait": 120.0})
    try:
        assert plugin.lsp is not None
        said = harness.run_async(plugin.lsp.after_edit("a.ts"))
        assert said == "language server dies exited (it said: crashed on open)"
    finally:
        harness.close()
