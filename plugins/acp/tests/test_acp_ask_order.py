"""``crab acp`` tells the editor of a tool call (its ``session/update`` ``tool_call``) before it asks
about that call (``session/request_permission``), for a permission question and for a tool's
question, whether the provider streams its calls or gives them only with its reply (issue 42
item 7). The real ``crab acp`` in a subprocess, the ACP SDK's client side as the editor."""

from __future__ import annotations

from typing import Any

import acp
import pytest

SPEC = acp.PROTOCOL_VERSION


def noting(editor: Any) -> list[tuple[str, list[str]]]:
    """For each question as it arrives at ``editor``: its call and the calls the editor was told of."""
    known: list[tuple[str, list[str]]] = []
    answer = editor.request_permission

    async def request_permission(session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        known.append((tool_call.tool_call_id, [u.tool_call_id for u in editor.of("tool_call")]))
        return await answer(session_id, tool_call, options, **kwargs)

    editor.request_permission = request_permission
    return known


async def prompt(crab_acp: Any, editor: Any, model: str, text: str) -> Any:
    async with crab_acp.connect(model, editor) as (conn, _):
        await conn.initialize(protocol_version=SPEC, client_capabilities=crab_acp.capabilities())
        new = await conn.new_session(cwd=str(crab_acp.work), mcp_servers=[])
        return await conn.prompt(session_id=new.session_id, prompt=[acp.text_block(text)])


@pytest.mark.parametrize("stream_calls", [True, False], ids=["streamed", "unstreamed"])
def test_acp_a_permission_question_comes_after_its_tool_call(crab_acp: Any, editor: Any, stream_calls: bool) -> None:
    known = noting(editor)
    model = crab_acp.script(
        [{"text": "Patching a."}, {"tool": "patch_file", "args": {"path": "a.txt"}, "id": "call_a"}],
        [
            {"tool": "note", "args": {"text": "both"}, "id": "call_n"},
            {"tool": "patch_file", "args": {"path": "b.txt"}, "id": "call_b"},
        ],
        [{"text": "done"}],
        stream_calls=stream_calls,
    )
    editor.answers = ["once", "once"]
    answer = crab_acp.run(prompt(crab_acp, editor, model, "patch two files"))
    assert answer.stop_reason == "end_turn"
    assert [asked for asked, _ in known] == ["call_a", "call_b"]
    for asked, told in known:
        assert asked in told, known
    assert [u.tool_call_id for u in editor.of("tool_call")] == ["call_a", "call_n", "call_b"]  # each once
    assert (crab_acp.work / "a.txt").exists() and (crab_acp.work / "b.txt").exists()


@pytest.mark.parametrize("stream_calls", [True, False], ids=["streamed", "unstreamed"])
def test_acp_a_tools_question_comes_after_its_tool_call(crab_acp: Any, editor: Any, stream_calls: bool) -> None:
    known = noting(editor)
    model = crab_acp.script(
        [{"tool": "ask_user", "args": {"question": "Which one?", "choices": ["red", "blue"]}, "id": "q1"}],
        [{"text": "thanks"}],
        stream_calls=stream_calls,
    )
    editor.answers = ["option:blue"]
    crab_acp.run(prompt(crab_acp, editor, model, "ask me"))
    assert known == [("q1", ["q1"])]
    ended = {u.tool_call_id: u for u in editor.of("tool_call_update") if u.status in ("completed", "failed")}
    assert ended["q1"].content[-1].content.text == "answer: blue"
