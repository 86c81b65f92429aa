"""Real MCP servers nobody here wrote: mcp-server-time and mcp-server-git (PyPI, this plugin's
``test`` extra) and @modelcontextprotocol/server-everything (npm, pinned in tests/peers) over
stdio and streamable HTTP. Each: list the tools, call one, and check an error path. And the
reference filesystem server (npm, pinned there too) through a real agent: crab's roots keep the
folder its command line names, and ``roots = false`` declares none."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from crab import ToolContext
from crab.tools import run_tool
from crab_mcp.manager import Manager
from crab_mcp.server import ServerLink
from crab_mcp.settings import server_configs

pytestmark = pytest.mark.slow


def with_server(tmp_path: Path, table: dict[str, Any], check: Any, environ: dict[str, str] | None = None) -> None:
    links = [ServerLink(c, tmp_path / "logs", environ=environ) for c in server_configs({"servers": {"p": table}})]

    async def go() -> None:
        manager = Manager(links)
        failed = await manager.start()
        assert failed == {}, failed
        try:
            tools = {t.name: t for t in manager.tools()}
            ctx = ToolContext(session_id="s", workspace=tmp_path)

            async def call(name: str, args: dict[str, Any]) -> Any:
                return await run_tool(tools[name], args, ctx)

            await check(tools, call)
        finally:
            await manager.stop()

    asyncio.run(go())


def test_mcp_server_time(tmp_path, peer):
    command = peer("mcp-server-time")

    async def check(tools: dict[str, Any], call: Any) -> None:
        assert {"p_get_current_time", "p_convert_time"} <= set(tools)
        now = await call("p_get_current_time", {"timezone": "UTC"})
        assert not now.is_error and now.details["structured_content"]["timezone"] == "UTC"
        bad = await call("p_get_current_time", {"timezone": "Mars/Olympus"})
        assert bad.is_error and "Mars/Olympus" in bad.content

    with_server(tmp_path, {"command": command, "args": ["--local-timezone", "UTC"]}, check)


def test_mcp_server_git(tmp_path, peer):
    command = peer("mcp-server-git")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    (repo / "hello.txt").write_text("hi\n")

    async def check(tools: dict[str, Any], call: Any) -> None:
        assert {"p_git_status", "p_git_log", "p_git_diff"} <= set(tools)
        status = await call("p_git_status", {"repo_path": str(repo)})
        assert not status.is_error and "hello.txt" in status.content
        missing = await call("p_git_status", {"repo_path": str(tmp_path / "nope")})
        assert missing.is_error

    with_server(tmp_path, {"command": command, "args": ["--repository", str(repo)]}, check)


def test_server_everything_over_stdio(tmp_path, everything_js, unfence):
    async def check(tools: dict[str, Any], call: Any) -> None:
        assert {"p_echo", "p_get-sum", "p_get-tiny-image"} <= set(tools)
        assert tools["p_echo"].parameters.get("$schema") is None
        echo = await call("p_echo", {"message": "hello from crab"})
        assert unfence(echo.content) == "Echo: hello from crab"
        image = await call("p_get-tiny-image", {})
        assert "[image image/png" in image.content and image.details["content_types"] == ["image"]
        assert [i.media_type for i in image.images] == ["image/png"]  # the model sees the picture
        total = await call("p_get-sum", {"a": 2, "b": 3})
        assert "5" in total.content
        bad = await call("p_get-sum", {"a": "two"})
        assert bad.is_error
        env = await call("p_get-env", {})
        names = set(json.loads(unfence(env.content)))
        assert "PATH" in names and "OPENAI_API_KEY" not in names

    environ = {**os.environ, "OPENAI_API_KEY": "sk-must-not-reach-the-server"}
    with_server(tmp_path, {"command": "node", "args": [str(everything_js), "stdio"]}, check, environ)


def test_server_everything_over_streamable_http(tmp_path, everything_js, http_server, port, unfence):
    server = http_server(["node", str(everything_js), "streamableHttp"], port, env={**os.environ, "PORT": str(port)})
    try:

        async def check(tools: dict[str, Any], call: Any) -> None:
            assert "p_echo" in tools
            assert unfence((await call("p_echo", {"message": "over http"})).content) == "Echo: over http"

        with_server(tmp_path, {"url": f"http://127.0.0.1:{port}/mcp"}, check)
    finally:
        server.stop()


def _filesystem_agent(crab_home: Path, tmp_path: Path, filesystem_js: Path, replies: list[Any], **server: Any) -> Any:
    import shutil

    import crab_mcp
    from crab.testing import AgentHarness

    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed (apt-get install nodejs)")
    workspace, data = tmp_path / "ws", tmp_path / "data"
    workspace.mkdir()
    data.mkdir()
    (data / "report.txt").write_text("the data folder's report\n")
    table = {"command": node, "args": [str(filesystem_js), str(data)], "connect_timeout": 60, **server}
    return AgentHarness(
        replies,
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"fs": table}, "plugins.mcp.startup_wait": 60, "crab.permissions": "yolo"},
        workspace=workspace,
    )


def _wait_for_log(log: Path, text: str, harness: Any, deadline: float = 60) -> bool:
    import time

    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if log.exists() and text in log.read_text():
            return True
        harness.run_async(asyncio.sleep(0.1))
    return False


def test_the_reference_filesystem_server_keeps_the_folder_its_command_line_names(crab_home, tmp_path, filesystem_js):
    # crab declares roots (the workspace), and server-filesystem replaces the folders its command
    # line names with the client's roots: by default crab's roots include the folders the
    # server's own arguments name, so /data stays readable (issue 39, item 6).
    from crab.messages import ToolResultMessage

    data = tmp_path / "data"
    h = _filesystem_agent(
        crab_home,
        tmp_path,
        filesystem_js,
        [[{"tool": "fs_read_text_file", "args": {"path": str(data / "report.txt")}}], [{"text": "done"}]],
    )
    try:
        log = crab_home / "mcp" / "logs" / "fs.log"
        assert _wait_for_log(log, "Updated allowed directories from MCP roots", h), log.read_text()[-2000:]
        h.run("read it")
        (read,) = [m for m in h.session.messages if isinstance(m, ToolResultMessage)]
        assert not read.is_error and "the data folder's report" in read.content, read.content
    finally:
        h.close()


def test_roots_false_declares_no_roots_to_that_server(crab_home, tmp_path, filesystem_js):
    from crab.messages import ToolResultMessage

    h = _filesystem_agent(
        crab_home,
        tmp_path,
        filesystem_js,
        [[{"tool": "fs_list_allowed_directories", "args": {}}], [{"text": "done"}]],
        roots=False,
    )
    try:
        h.run("where may you go?")
        (listed,) = [m for m in h.session.messages if isinstance(m, ToolResultMessage)]
        assert str((tmp_path / "data").resolve()) in listed.content, listed.content
        assert str((tmp_path / "ws").resolve()) not in listed.content  # no roots: the workspace was never offered
        log = (crab_home / "mcp" / "logs" / "fs.log").read_text()
        assert "MCP roots" not in log.replace("MCP roots protocol (if client supports it)", "")
    finally:
        h.close()
