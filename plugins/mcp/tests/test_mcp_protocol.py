"""The rest of MCP, client side, against the tests' own server (stdio and in-process) and
server-everything: tool lists that change mid-run, progress, logging, roots, resources,
prompts, sampling and elicitation."""

from __future__ import annotations

import asyncio
import os
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import crab_mcp
import pytest
from crab import ToolContext
from crab.events import NoticeEvent
from crab.messages import ToolResultMessage
from crab.tools import run_tool
from crab_mcp.manager import Manager
from crab_mcp.server import ServerLink
from crab_mcp.settings import ServerConfig, server_configs


def results(h: Any) -> list[ToolResultMessage]:
    return [m for m in h.session.messages if isinstance(m, ToolResultMessage)]


def in_process(server: Any, **options: Any) -> ServerLink:
    config = ServerConfig(options.pop("name", "tiny"), command="in-process", **options)

    def connector(stack: AsyncExitStack) -> Any:
        return server

    return ServerLink(config, None, connector=connector)


async def started(*links: ServerLink) -> Manager:
    manager = Manager(list(links))
    assert await manager.start() == {}
    return manager


def tool_of(manager: Manager, name: str) -> Any:
    return {t.name: t for t in manager.tools()}[name]


# --- tools/list_changed --------------------------------------------------------------------


def test_a_tool_added_mid_run_is_callable_in_the_same_chat(crab_agent, tiny_cmd, unfence):
    h = crab_agent(
        [
            [{"tool": "tiny_grow", "args": {"name": "fresh"}}],
            [{"text": "grown"}],
            [{"tool": "tiny_fresh", "args": {}}],
            [{"text": "used it"}],
        ],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"tiny": tiny_cmd()}, "crab.permissions": "yolo"},
    )
    assert "tiny_fresh" not in h.agent.tools
    h.run("grow a tool")
    for _ in range(100):  # the relist runs in the server's task, after the notification
        if "tiny_fresh" in h.agent.tools:
            break
        h.run_async(asyncio.sleep(0.05))
    assert h.agent.tools["tiny_fresh"].plugin == "mcp"
    h.run("use it")
    grew, used = results(h)
    assert unfence(grew.content) == "added fresh"
    assert not used.is_error and unfence(used.content) == "grown: fresh"


def test_a_tool_the_server_dropped_says_so(tiny):
    async def go() -> None:
        link = in_process(tiny.build())
        manager = await started(link)
        try:
            echo = tool_of(manager, "tiny_echo")
            link.tools = [t for t in link.tools if t.name != "echo"]
            out = await run_tool(echo, {"text": "x"}, ToolContext(session_id="s", workspace=Path.cwd()))
            assert out.is_error and "no longer offers 'echo'" in out.content
        finally:
            await manager.stop()

    asyncio.run(go())


# --- progress --------------------------------------------------------------------------------


def test_every_call_carries_a_progress_token_and_progress_becomes_notices(tiny, tmp_path, unfence):
    async def go() -> None:
        manager = await started(in_process(tiny.build()))
        try:
            seen: list[Any] = []
            ctx = ToolContext(session_id="s", workspace=tmp_path, emit=seen.append)
            out = await run_tool(tool_of(manager, "tiny_progress_token"), {}, ctx)
            assert unfence(out.content) == "token"
            lines = [e.message for e in seen if isinstance(e, NoticeEvent)]
            assert lines[-1] == "MCP tiny:progress_token: 2/2 (100%) done"
            assert lines[0] == "MCP tiny:progress_token: 1/2 (50%) halfway"
        finally:
            await manager.stop()

    asyncio.run(go())


# --- logging -------------------------------------------------------------------------------


def test_logging_notifications_go_to_the_servers_masked_log(tmp_path, tiny_cmd):
    secret = "s3cret-value-of-the-server"
    table = {**tiny_cmd(), "env": {"TINY_TOKEN": "${TINY_TOKEN}"}}
    (config,) = server_configs({"servers": {"tiny": table}})
    link = ServerLink(config, tmp_path / "logs", environ={**os.environ, "TINY_TOKEN": secret})

    async def go() -> None:
        manager = await started(link)
        try:
            ctx = ToolContext(session_id="s", workspace=tmp_path)
            await run_tool(tool_of(manager, "tiny_say"), {"text": f"hello log, token {secret}"}, ctx)
        finally:
            await manager.stop()

    asyncio.run(go())
    log = (tmp_path / "logs" / "tiny.log").read_text()
    assert "[server log info tiny] hello log, token" in log
    assert secret not in log


# --- roots ---------------------------------------------------------------------------------


def test_roots_are_the_workspace_and_extra_roots_and_follow_the_calls_workspace(tiny, tmp_path, unfence):
    extra, other = tmp_path / "extra", tmp_path / "other"
    extra.mkdir(), other.mkdir()

    async def go() -> None:
        link = in_process(tiny.build())
        link.workspace, link.extra_roots = tmp_path, [extra]
        manager = await started(link)
        try:
            roots = tool_of(manager, "tiny_roots")
            first = await run_tool(roots, {}, ToolContext(session_id="s", workspace=tmp_path))
            assert unfence(first.content).splitlines() == [tmp_path.resolve().as_uri(), extra.resolve().as_uri()]
            moved = await run_tool(roots, {}, ToolContext(session_id="t", workspace=other))
            assert unfence(moved.content).splitlines() == [other.resolve().as_uri(), extra.resolve().as_uri()]
        finally:
            await manager.stop()

    asyncio.run(go())


# --- resources -----------------------------------------------------------------------------


def test_resources_and_templates_are_listed_and_read_through_two_tools(tiny, tmp_path, unfence):
    async def go() -> None:
        manager = await started(in_process(tiny.build()))
        try:
            tools = {t.name: t for t in manager.resource_tools()}
            assert set(tools) == {"mcp_resources", "mcp_read_resource"}
            assert tools["mcp_read_resource"].permission == "network"  # the gate asks, as for a tool
            ctx = ToolContext(session_id="s", workspace=tmp_path)
            listed = await run_tool(tools["mcp_resources"], {}, ctx)
            header, fenced_listing = listed.content.split("\n", 1)
            assert header == "server tiny:"  # what the server wrote is fenced as its content
            assert "tiny://note  note (text/plain)" in unfence(fenced_listing)
            assert "template tiny://greeting/{who}  greeting" in unfence(fenced_listing)
            note = await run_tool(tools["mcp_read_resource"], {"server": "tiny", "uri": "tiny://note"}, ctx)
            assert unfence(note.content) == "a note from tiny"
            assert "Result of mcp_read_resource from MCP server 'tiny'" in note.content
            hello = await run_tool(tools["mcp_read_resource"], {"server": "tiny", "uri": "tiny://greeting/crab"}, ctx)
            assert unfence(hello.content) == "hello crab"
            missing = await run_tool(tools["mcp_read_resource"], {"server": "nope", "uri": "tiny://note"}, ctx)
            assert missing.is_error and "servers with resources: tiny" in missing.content
            assert manager.resource_tools() == []  # registered once
        finally:
            await manager.stop()

    asyncio.run(go())


def test_resource_tools_join_an_agents_registry(crab_agent, tiny_cmd, unfence):
    h = crab_agent(
        [[{"tool": "mcp_read_resource", "args": {"server": "tiny", "uri": "tiny://note"}}], [{"text": "read"}]],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"tiny": {**tiny_cmd(), "permission": "read"}}},
    )
    assert h.agent.tools["mcp_read_resource"].permission == "read"
    h.run("read the note")
    (read,) = results(h)
    assert unfence(read.content) == "a note from tiny"


# --- prompts -------------------------------------------------------------------------------


def test_a_servers_prompt_is_a_slash_command_listed_in_help(crab_agent, tiny_cmd):
    h = crab_agent(
        [[{"text": "reviewed"}]],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"tiny": tiny_cmd()}},
    )
    h.run("/help")
    h.run("/tiny")
    h.run("/tiny:review")
    h.run('/tiny:review "the README" tone=strict')
    shown = [e.text for e in h.events if type(e).__name__ == "CommandOutput"]
    assert any("/tiny [PROMPT ARGS…] — MCP server 'tiny'" in text for text in shown)
    assert any("/tiny:review topic tone? — Review something." in text for text in shown)
    assert any("review needs topic" in text for text in shown)
    (request,) = h.requests
    assert request.messages[-1].content == "(MCP prompt tiny:review)\nPlease review the README, in a strict tone."


# --- sampling and elicitation ----------------------------------------------------------------


def test_sampling_is_declared_and_refused_with_a_reason(tiny, tmp_path, unfence):
    async def go() -> None:
        manager = await started(in_process(tiny.build()))
        try:
            out = await run_tool(tool_of(manager, "tiny_sample"), {}, ToolContext(session_id="s", workspace=tmp_path))
            assert unfence(out.content).startswith("refused: crab refused the sampling request")
        finally:
            await manager.stop()

    asyncio.run(go())


def test_elicitation_asks_the_permission_question_of_the_running_call(tiny, tmp_path, unfence):
    asked: list[Any] = []
    answers = iter(["once", "deny", "once"])

    async def ask(request: Any) -> str:
        asked.append(request)
        return next(answers)

    async def go() -> None:
        manager = await started(in_process(tiny.build()))
        try:
            ctx = ToolContext(session_id="s", workspace=tmp_path, ask=ask)
            assert unfence((await run_tool(tool_of(manager, "tiny_confirm"), {}, ctx)).content) == "action: accept"
            assert unfence((await run_tool(tool_of(manager, "tiny_confirm"), {}, ctx)).content) == "action: decline"
            visit = await run_tool(tool_of(manager, "tiny_visit"), {}, ctx)
            assert unfence(visit.content) == "action: accept"
            assert "open https://example.invalid/login" in asked[-1].summary
            assert "crab does not open it" in asked[-1].summary
            form = await run_tool(tool_of(manager, "tiny_form"), {}, ctx)
            assert unfence(form.content).startswith("refused: crab refused the elicitation: it asks for a form (color)")
            assert len(asked) == 3  # the form was never put to the user
            remote = ToolContext(session_id="s", workspace=tmp_path, ask=ask, local=False)
            far = await run_tool(tool_of(manager, "tiny_confirm"), {}, remote)
            assert unfence(far.content).startswith("refused:") and "nobody can answer here" in far.content
            nobody = await run_tool(
                tool_of(manager, "tiny_confirm"), {}, ToolContext(session_id="s", workspace=tmp_path)
            )
            assert "nobody can answer here" in nobody.content
        finally:
            await manager.stop()

    asyncio.run(go())


# --- transports and results ------------------------------------------------------------------


def test_transport_sse_is_only_for_url_servers_and_named_in_the_error():
    from crab import InvalidValue
    from crab_mcp.settings import check_server

    check_server("old", {"url": "http://127.0.0.1:1/sse", "transport": "sse"})
    with pytest.raises(InvalidValue, match="only with url"):
        check_server("old", {"command": "x", "transport": "sse"})
    with pytest.raises(InvalidValue, match=r"streamable-http .* or sse"):
        check_server("old", {"url": "http://127.0.0.1:1/sse", "transport": "websocket"})


def test_audio_and_image_results_are_a_note_with_type_and_size():
    import base64

    from crab_mcp.results import to_tool_result
    from mcp import types

    data = base64.b64encode(b"\0" * 300).decode()
    result = types.CallToolResult(
        content=[
            types.AudioContent(type="audio", data=data, mime_type="audio/wav"),
            types.ImageContent(type="image", data=data, mime_type="image/png"),
        ]
    )
    out = to_tool_result(result)
    assert out.content.splitlines() == [
        "[audio audio/wav, about 300 bytes, not shown]",
        "[image image/png, about 300 bytes, not shown]",
    ]
    assert out.details["content_types"] == ["audio", "image"]
