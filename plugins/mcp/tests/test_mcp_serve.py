"""``crab mcp serve`` driven by the SDK's own client over stdio, with a tool plugin of the test's
own (so this suite needs only core and crab-mcp): list tools with their schemas, call read tools,
a refused write, a write allowed by the user's config, a project that cannot allow it, and
configured MCP servers that are never started by the bridge."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

PLUGIN_SOURCE = '''
"""Tools for the crab mcp serve tests."""
from pathlib import Path

import crab

CRAB_API = ">=0.1,<0.2"


@crab.tool
def t_read(path: str, ctx: crab.ToolContext) -> str:
    """Read a text file of the workspace.

    Args:
        path: the file, relative to the workspace
    """
    target = (ctx.workspace / path).resolve()
    if not target.is_relative_to(ctx.workspace.resolve()):
        raise crab.ToolError(f"{path} is outside the workspace")
    return target.read_text()


@crab.tool
def t_grep(pattern: str, ctx: crab.ToolContext) -> str:
    """Lines of workspace files containing a text."""
    hits = []
    for file in sorted(ctx.workspace.rglob("*.txt")):
        for n, line in enumerate(file.read_text().splitlines(), 1):
            if pattern in line:
                hits.append(f"{file.name}:{n}:{line}")
    return "\\n".join(hits) or "no matches"


@crab.tool(permission="write")
def t_write(path: str, content: str, ctx: crab.ToolContext) -> str:
    """Write a file of the workspace."""
    (ctx.workspace / path).write_text(content)
    return f"wrote {path}"


@crab.tool
async def t_wait(seconds: float) -> str:
    """Wait, then say so (a long tool)."""
    import asyncio

    await asyncio.sleep(seconds)
    return f"waited {seconds:g} s"


@crab.tool
async def t_hold(marker: str) -> str:
    """Hold until cancelled, then clean up (with awaits, as ending a process group does)."""
    import asyncio

    Path(marker + ".started").write_text("started")
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        for _ in range(3):
            await asyncio.sleep(0.1)
        Path(marker).write_text("cleaned up")
        raise
    return "never"


@crab.hookimpl
def crab_tools(config):
    return [t_read, t_grep, t_write, t_wait, t_hold]
'''


@pytest.fixture
def bridge_env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "crab_mcp_test_tools.py").write_text(PLUGIN_SOURCE)
    dist = site / "crab_mcp_test_tools-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crab-mcp-test-tools\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[crab]\nmcptesttools = crab_mcp_test_tools\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env.update({"PYTHONPATH": str(site), "CRAB_HOME": str(home)})
    return env


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta gamma\n")
    (tmp_path / "secret.txt").write_text("outside")
    return root


def session(env: dict[str, str], cwd: Path, check: Any, *extra: str, plugins: str = "mcptesttools") -> None:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "crab", "mcp", "serve", "--plugins", plugins, *extra],
        env=env,
        cwd=str(cwd),
    )

    async def go() -> None:
        with open(cwd.parent / "serve-stderr.log", "a") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=60) as client:
                await check(client)

    asyncio.run(go())


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def test_serve_lists_tools_with_schemas_and_runs_read_tools(bridge_env, workspace):
    async def check(client: Any) -> None:
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert set(tools) == {"t_read", "t_grep", "t_write", "t_wait", "t_hold"}
        assert tools["t_read"].input_schema["required"] == ["path"]
        assert tools["t_read"].annotations.read_only_hint is True
        assert tools["t_write"].annotations.read_only_hint is False
        read = await client.call_tool("t_read", {"path": "notes.txt"})
        assert not read.is_error and text(read) == "alpha\nbeta gamma\n"
        grep = await client.call_tool("t_grep", {"pattern": "gamma"})
        assert text(grep) == "notes.txt:2:beta gamma"
        escape = await client.call_tool("t_read", {"path": "../secret.txt"})
        assert escape.is_error and "outside the workspace" in text(escape)
        bad = await client.call_tool("t_read", {"nope": 1})
        assert bad.is_error and "invalid arguments for t_read" in text(bad)
        unknown = await client.call_tool("rm_rf", {})
        assert unknown.is_error and "Unknown tool 'rm_rf'" in text(unknown)

    session(bridge_env, workspace, check)


def test_a_write_is_refused_unless_the_users_config_allows_it(bridge_env, workspace):
    async def refused(client: Any) -> None:
        result = await client.call_tool("t_write", {"path": "new.txt", "content": "x"})
        assert result.is_error and "needs write permission, which this bridge does not grant" in text(result)
        assert "serve_permissions" in text(result)

    session(bridge_env, workspace, refused)
    assert not (workspace / "new.txt").exists()

    # An untrusted project config cannot allow it (serve_permissions is trust-only)...
    (workspace / ".crab").mkdir()
    (workspace / ".crab" / "config.toml").write_text('[plugins.mcp]\nserve_permissions = ["read", "write"]\n')
    session(bridge_env, workspace, refused)
    assert not (workspace / "new.txt").exists()

    # ...the user's own config can.
    home = Path(bridge_env["CRAB_HOME"])
    (home / "config.toml").write_text('[plugins.mcp]\nserve_permissions = ["read", "write"]\n')

    async def allowed(client: Any) -> None:
        result = await client.call_tool("t_write", {"path": "new.txt", "content": "x"})
        assert not result.is_error and text(result) == "wrote new.txt"

    session(bridge_env, workspace, allowed)
    assert (workspace / "new.txt").read_text() == "x"


def test_serve_does_not_start_the_configured_mcp_servers(bridge_env, workspace, tmp_path):
    marker = tmp_path / "started"
    home = Path(bridge_env["CRAB_HOME"])
    (home / "config.toml").write_text(
        f'[plugins.mcp.servers.loop]\ncommand = "touch"\nargs = ["{marker}"]\n'
        f'[plugins.mcp.servers.self]\ncommand = "{sys.executable}"\nargs = ["-m", "crab", "mcp", "serve"]\n'
    )

    async def check(client: Any) -> None:
        listed = await client.list_tools()
        assert not any(t.name.startswith(("loop_", "self_")) for t in listed.tools)

    session(bridge_env, workspace, check)
    bridge_env_all = dict(bridge_env)
    del bridge_env_all["PYTHONPATH"]
    session_all_plugins(bridge_env_all, workspace)
    assert not marker.exists()


def session_all_plugins(env: dict[str, str], cwd: Path) -> None:
    """``crab mcp serve`` with every installed plugin (crab-mcp itself among them) lists no MCP tool."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "crab", "mcp", "serve"], env=env, cwd=str(cwd))

    async def go() -> None:
        with open(cwd.parent / "serve-stderr.log", "a") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=60) as client:
                listed = await client.list_tools()
                assert not any(t.name.startswith(("loop_", "self_")) for t in listed.tools)

    asyncio.run(go())


def test_serve_declares_list_changed_false_which_is_true_of_a_fixed_tool_box(bridge_env, workspace):
    async def check(client: Any) -> None:
        caps = client.server_capabilities
        assert caps.tools is not None and not caps.tools.list_changed
        # Without a read and a glob tool (crab-tools-basic's) or a plugin offering prompts,
        # neither is declared: nothing to list.
        assert caps.resources is None and caps.prompts is None

    session(bridge_env, workspace, check)


def test_a_long_call_with_a_progress_token_gets_a_heartbeat(bridge_env, workspace):
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    async def check(client: Any) -> None:
        done = await client.call_tool("t_wait", {"seconds": 5}, progress_callback=progress)
        assert text(done) == "waited 5 s"
        quick = await client.call_tool("t_grep", {"pattern": "alpha"})  # no token: no notification
        assert text(quick) == "notes.txt:1:alpha"

    session(bridge_env, workspace, check)
    assert seen, "no progress notification during a 5 s call"
    values = [v for v, _, _ in seen]
    assert values == sorted(values) and all(total is None for _, total, _ in seen)
    assert seen[0][2] is not None and seen[0][2].startswith("t_wait still running (")


def test_a_call_the_client_cancels_is_cancelled_once_and_cleans_up(bridge_env, workspace, tmp_path):
    # The SDK applies notifications/cancelled through an anyio cancel scope that cancels again at
    # every await: the tool's own cleanup (here three awaits, for bash ending its process group)
    # must still run to its end (issue 39, item 5; tests/test_mcp_serve_cancel.py does it with bash).
    marker = tmp_path / "hold"

    async def check(client: Any) -> None:
        call = asyncio.ensure_future(client.call_tool("t_hold", {"marker": str(marker)}))
        deadline = time.monotonic() + 60
        while not Path(f"{marker}.started").exists() and time.monotonic() < deadline:
            assert not call.done(), call.result()
            await asyncio.sleep(0.05)
        call.cancel()  # the SDK sends notifications/cancelled for it
        await asyncio.gather(call, return_exceptions=True)
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert marker.exists(), "the cancelled tool's cleanup was cut short"
        quick = await client.call_tool("t_grep", {"pattern": "alpha"})  # the server serves on
        assert text(quick) == "notes.txt:1:alpha"

    session(bridge_env, workspace, check)
    assert marker.read_text() == "cleaned up"


def needs(module: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} not installed (pip install -e plugins/{module.removeprefix('crab_').replace('_', '-')})")


def test_workspace_files_are_resources_read_through_the_read_tools_seatbelt(bridge_env, workspace, tmp_path):
    needs("crab_tools_basic")
    from mcp import MCPError

    (workspace / "sub").mkdir()
    (workspace / "sub" / "long.txt").write_text("".join(f"line {n}\twith a tab\n" for n in range(1, 4500)))
    (workspace / "out.txt").symlink_to(tmp_path / "secret.txt")
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)

    async def check(client: Any) -> None:
        caps = client.server_capabilities
        assert caps.resources is not None and not caps.resources.list_changed and not caps.resources.subscribe
        listed = {r.name: r for r in (await client.list_resources()).resources}
        assert {"notes.txt", "sub/long.txt"} <= set(listed) and "out.txt" not in listed  # glob skips symlinks
        notes = listed["notes.txt"]
        assert notes.uri == (workspace / "notes.txt").as_uri() and notes.mime_type == "text/plain"
        read = await client.read_resource(notes.uri)
        assert read.contents[0].text == "alpha\nbeta gamma\n"
        long = await client.read_resource(listed["sub/long.txt"].uri)  # more than one page of the read tool
        assert long.contents[0].text == "".join(f"line {n}\twith a tab\n" for n in range(1, 4500))
        for uri, why in [
            ((workspace / "out.txt").as_uri(), "outside the workspace"),
            ((tmp_path / "secret.txt").as_uri(), "outside the workspace"),
            ((workspace / "blob.bin").as_uri(), "binary file"),
            ("https://example.invalid/x", "not a file:// URI"),
        ]:
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert why in refused.value.message, (uri, refused.value.message)

    session(bridge_env, workspace, check, plugins="mcptesttools,tools-basic")


SECRET = "dpl-0123456789abcdef-serve"
"""A deploy token crab knows (its variable is named like a key) and a workspace file holds."""


def test_what_serve_sends_is_masked_with_the_secrets_crab_knows(bridge_env, workspace):
    env = {**bridge_env, "DEPLOY_TOKEN": SECRET}
    (workspace / "leak.txt").write_text(f"deploy with {SECRET} today\n")

    async def check(client: Any) -> None:
        read = await client.call_tool("t_read", {"path": "leak.txt"})
        assert text(read) == "deploy with [redacted] today\n"
        grep = await client.call_tool("t_grep", {"pattern": "deploy"})
        assert text(grep) == "leak.txt:1:deploy with [redacted] today"
        failed = await client.call_tool("t_read", {"path": SECRET})  # an error result names the path
        assert failed.is_error and SECRET not in text(failed) and "[redacted]" in text(failed)

    session(env, workspace, check)


def test_resources_and_prompts_serve_sends_are_masked_too(bridge_env, workspace):
    needs("crab_tools_basic")
    needs("crab_skills")
    from mcp import MCPError

    env = {**bridge_env, "DEPLOY_TOKEN": SECRET}
    (workspace / "leak.txt").write_text(f"deploy with {SECRET} today\n")
    folder = Path(bridge_env["CRAB_HOME"]) / "skills" / "deploy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: deploy\ndescription: Deploy.\n---\nUse {SECRET} to deploy.\n")

    async def check(client: Any) -> None:
        read = await client.read_resource((workspace / "leak.txt").as_uri())
        assert read.contents[0].text == "deploy with [redacted] today\n"
        with pytest.raises(MCPError) as refused:  # the read tool's reason names the path it missed
            await client.read_resource((workspace / f"{SECRET}.txt").as_uri())
        assert SECRET not in refused.value.message and "[redacted]" in refused.value.message
        got = await client.get_prompt("deploy", {"request": f"now, with {SECRET}"})
        said = got.messages[0].content.text
        assert SECRET not in said and "Use [redacted] to deploy." in said and said.endswith("now, with [redacted]")

    session(env, workspace, check, plugins="mcptesttools,tools-basic,skills")


def test_a_secret_the_resource_cut_splits_is_masked_whole(bridge_env, workspace):
    needs("crab_tools_basic")
    from crab_mcp.serve_resources import MAX_BYTES

    env = {**bridge_env, "DEPLOY_TOKEN": SECRET}
    filler = "x" * 99 + "\n"
    before = MAX_BYTES - 20  # the secret starts 20 characters before the cut, and ends after it
    lines = before // len(filler)
    tail = "y" * (before - lines * len(filler))
    (workspace / "big.txt").write_text(filler * lines + f"{tail}{SECRET} and on\n" + filler * 3)

    async def check(client: Any) -> None:
        read = await client.read_resource((workspace / "big.txt").as_uri())
        got = read.contents[0].text
        assert "cut at" in got and SECRET[:12] not in got and got[before : before + 4] == "[red"

    session(env, workspace, check, plugins="mcptesttools,tools-basic")


def test_skills_are_prompts(bridge_env, workspace):
    needs("crab_skills")
    from mcp import MCPError

    folder = Path(bridge_env["CRAB_HOME"]) / "skills" / "release-notes"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\n"
        "Read the log, group by kind, keep it short.\n"
    )

    async def check(client: Any) -> None:
        caps = client.server_capabilities
        assert caps.prompts is not None and not caps.prompts.list_changed
        (prompt,) = (await client.list_prompts()).prompts
        assert prompt.name == "release-notes" and prompt.description == "Write release notes from the git log."
        assert [(a.name, a.required) for a in prompt.arguments] == [("request", False)]
        got = await client.get_prompt("release-notes", {"request": "for 2.0"})
        message = got.messages[0]
        assert message.role == "user"
        assert message.content.text.startswith('<skill name="release-notes" source="user"')
        assert "Read the log, group by kind, keep it short." in message.content.text
        assert message.content.text.endswith("for 2.0")
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("nope", {})
        assert "no prompt 'nope' (offered: release-notes)" in unknown.value.message

    session(bridge_env, workspace, check, plugins="mcptesttools,skills")


def test_serve_over_http_on_loopback_demands_the_bearer_token_and_never_prints_it(
    bridge_env, workspace, tmp_path, port
):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    errlog = tmp_path / "serve-http-stderr.log"
    (workspace / "leak.txt").write_text(f"deploy with {SECRET} today\n")
    args = [sys.executable, "-m", "crab", "mcp", "serve", "--plugins", "mcptesttools", "--http", str(port)]
    with open(errlog, "w") as err:
        env = {**bridge_env, "DEPLOY_TOKEN": SECRET}
        proc = subprocess.Popen(args, cwd=workspace, env=env, stdout=err, stderr=err)
    try:
        for _ in range(600):
            assert proc.poll() is None, errlog.read_text()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            time.sleep(0.1)
        token_file = Path(bridge_env["CRAB_HOME"]) / "mcp" / "serve.token"
        token = token_file.read_text().strip()
        assert len(token) >= 32 and oct(token_file.stat().st_mode & 0o777) == "0o600"
        url = f"http://127.0.0.1:{port}/mcp"
        assert httpx2.post(url, json={}).status_code == 401
        assert httpx2.post(url, json={}, headers={"Authorization": "Bearer wrong"}).status_code == 401

        async def go() -> None:
            headers = {"Authorization": f"Bearer {token}"}
            http = httpx2.AsyncClient(headers=headers, timeout=30)
            async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                listed = await client.list_tools()
                assert {t.name for t in listed.tools} == {"t_read", "t_grep", "t_write", "t_wait", "t_hold"}
                read = await client.call_tool("t_read", {"path": "notes.txt"})
                assert text(read) == "alpha\nbeta gamma\n"
                write = await client.call_tool("t_write", {"path": "x.txt", "content": "x"})
                assert write.is_error  # the same serve_permissions rule as over stdio
                leak = await client.call_tool("t_read", {"path": "leak.txt"})
                assert text(leak) == "deploy with [redacted] today\n"  # masked over HTTP too

        asyncio.run(go())
    finally:
        proc.terminate()
        proc.wait(20)
    said = errlog.read_text()
    assert f"listening on http://127.0.0.1:{port}/mcp" in said and token not in said
