"""crab-acp's pure parts on their own: the event mapping, prompt text, the line check, the
editor file tools' rules and the MCP server settings."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import acp
import crab
import pytest
from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer
from crab.testing import make_png
from crab_acp.editor_fs import file_diff, inside, numbered, replace_all
from crab_acp.framing import problem
from crab_acp.mcp_servers import server_settings
from crab_acp.prompt import prompt_parts, prompt_text
from crab_acp.updates import UpdateMapper, title_of


def test_acp_titles_kinds_and_locations() -> None:
    mapper = UpdateMapper("/work", {"deploy": "exec", "lookup": "network", "custom": "read"})
    assert title_of("bash", {"command": "make   test"}) == "bash: make test"
    assert title_of("grep", {"pattern": "TODO"}) == "grep TODO"
    assert title_of("read", {"file_path": "a.py"}) == "read a.py"
    assert len(title_of("bash", {"command": "x" * 500})) == 120
    kinds = {
        name: mapper.started(crab.messages.ToolCall(name, name, {})).kind
        for name in ("read", "edit", "bash", "grep", "web_fetch", "deploy", "lookup", "custom", "mystery")
    }
    assert kinds == {
        "read": "read",
        "edit": "edit",
        "bash": "execute",
        "grep": "search",
        "web_fetch": "fetch",
        "deploy": "execute",
        "lookup": "fetch",
        "custom": "read",
        "mystery": "other",
    }
    start = mapper.started(crab.messages.ToolCall("c1", "read", {"path": "src/x.py", "offset": 40}))
    assert start.locations[0].path == "/work/src/x.py" and start.locations[0].line == 40


def test_acp_results_diffs_plans_and_notices() -> None:
    mapper = UpdateMapper("/work")
    mapper.started(crab.messages.ToolCall("c1", "edit", {"path": "a.py"}))
    small = crab.events.FileDiff("a.py", "--- a\n+++ b\n", before="x\n", after="y\n", added=1, removed=1)
    large = crab.events.FileDiff("big.txt", "--- a/big.txt\n+++ b/big.txt\n@@ -1 +1 @@\n-a\n+b\n")
    (done,) = mapper.updates(crab.events.ToolResultEvent("c1", "edit", "edited a.py", diffs=(small, large)))
    assert done.status == "completed"
    assert [c.type for c in done.content] == ["diff", "content", "content"]
    assert (done.content[0].path, done.content[0].old_text, done.content[0].new_text) == ("/work/a.py", "x\n", "y\n")
    assert done.content[1].content.text.startswith("--- a/big.txt")  # too large to send whole: the unified diff
    (failed,) = mapper.updates(crab.events.ToolResultEvent("c2", "bash", "boom", is_error=True))
    assert failed.status == "failed"
    (plan,) = mapper.updates(
        crab.events.PlanEvent("s", (crab.events.PlanItem("a", "done"), crab.events.PlanItem("b", "in_progress")))
    )
    assert [(e.content, e.status, e.priority) for e in plan.entries] == [
        ("a", "completed", "medium"),
        ("b", "in_progress", "medium"),
    ]
    assert mapper.updates(crab.events.PlanEvent("s", ()))[0].entries == []  # cleared
    assert mapper.updates(crab.events.NoticeEvent("fyi")) == []
    (warning,) = mapper.updates(crab.events.NoticeEvent("plugin x failed", "warning"))
    assert "plugin x failed" in warning.content.text
    assert mapper.updates(crab.events.UsageEvent(crab.messages.Usage(1, 2))) == []


def test_acp_a_question_describes_its_call_as_its_tool_call_update_did() -> None:
    mapper = UpdateMapper("/work")
    (started,) = mapper.updates(
        crab.events.ToolCallEvent(crab.messages.ToolCall("c9", "write", {"path": "n.txt", "content": "x"}))
    )
    assert started.tool_call_id == "c9"
    asked = mapper.question(crab.PermissionRequest("write", "write", 'write(path="n.txt")', call_id="c9"))
    assert (asked.tool_call_id, asked.title, asked.kind) == ("c9", "write n.txt", "edit")
    other = mapper.question(crab.PermissionRequest("srv (MCP elicitation)", "network", "srv asks for a token"))
    assert other.title == "srv asks for a token"


def test_acp_prompt_blocks_become_one_text(tmp_path: Path) -> None:
    blocks = [
        acp.text_block("explain"),
        acp.resource_link_block("a b.py", (tmp_path / "a b.py").as_uri()),
        acp.text_block("and"),
        acp.resource_block(acp.embedded_text_resource("file:///w/x.py", "x = 1")),
        acp.resource_block(acp.embedded_blob_resource("file:///w/logo.png", "aGk=")),
        acp.image_block("aGk=", "image/png"),
    ]
    text = prompt_text(blocks)
    assert text.startswith(f"explain [@a b.py]({tmp_path / 'a b.py'}) and")
    assert '<context ref="/w/x.py">\nx = 1\n</context>' in text
    assert "binary resource /w/logo.png" in text
    assert "an attached image was left out: not a PNG, JPEG, GIF or WebP image" in text  # "hi" is no image
    assert prompt_text([acp.text_block("just text")]) == "just text"


def test_acp_image_blocks_become_image_parts_by_their_bytes() -> None:
    png = make_png(4, 3)
    blocks = [
        acp.text_block("what is this"),
        acp.image_block(base64.b64encode(png).decode(), "image/jpeg"),  # the editor's type is not trusted
        acp.image_block("not base64!", "image/png"),
    ]
    text, images = prompt_parts(blocks)
    assert [(i.media_type, i.data) for i in images] == [("image/png", png)]
    assert text == "what is this [an attached image was not valid base64 and was left out]"


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"{", -32700),
        (b'"text"', -32600),
        (b'{"jsonrpc": "2.0", "id": true, "method": "x"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1}', -32600),
        (b'{"id": 1, "method": "initialize"}', -32600),
    ],
)
def test_acp_lines_that_are_not_json_rpc(line: bytes, code: int) -> None:
    found = problem(line)
    assert found is not None and found[1] == code


def test_acp_lines_that_pass() -> None:
    assert problem(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}') is None
    assert problem(b'{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}') is None
    assert problem(b'{"jsonrpc": "2.0", "id": "a", "result": null}') is None


def test_acp_editor_paths_stay_in_the_workspace(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    os.symlink(tmp_path, work / "escape")
    assert inside(work, "src/a.py")[1] == "src/a.py"
    for path in ("../x", "/etc/passwd", "escape/x", "~/x"):
        with pytest.raises(crab.ToolError, match="outside the workspace"):
            inside(work, path)


def test_acp_edits_are_checked_before_any_applies() -> None:
    text = "a = 1\nb = 2\na = 1\n"
    assert replace_all(text, [{"old": "b = 2", "new": "b = 3"}]) == "a = 1\nb = 3\na = 1\n"
    assert replace_all(text, [{"old": "a = 1", "new": "a = 0", "replace_all": True}]) == "a = 0\nb = 2\na = 0\n"
    assert replace_all("x\r\ny\r\n", [{"old": "x\ny", "new": "x\nz"}]) == "x\r\nz\r\n"  # LF sent for a CRLF file
    for edits, why in (
        ([{"old": "a = 1", "new": "a = 0"}], "occurs 2 times"),
        ([{"old": "nope", "new": "x"}], "not found"),
        ([{"old": "", "new": "x"}], "non-empty"),
        ([{"old": "b = 2", "new": "b = 2"}], "the same"),
        ([{"old": "b = 2", "new": "x"}, {"old": "= 2\na", "new": "y"}], "overlap"),
    ):
        with pytest.raises(crab.ToolError, match=why):
            replace_all(text, edits)  # type: ignore[arg-type]


def test_acp_reads_are_numbered_and_bounded() -> None:
    text = "".join(f"line {n}\n" for n in range(1, 3001))
    shown = numbered(text, 1, None)
    assert shown.splitlines()[0] == "     1\tline 1"
    assert "[lines 1-2000 of 3000 shown; read on with offset=2001]" in shown
    assert numbered(text, 2999, 5).splitlines() == ["  2999\tline 2999", "  3000\tline 3000"]
    assert "past its end" in numbered("a\n", 5, None)
    assert numbered("", 1, None) == "(empty file)"
    assert len(numbered("x" * 40_000 + "\n" + "y" * 40_000 + "\n", 1, None).encode()) < 50_100


def test_acp_diffs_count_lines_and_keep_small_texts() -> None:
    diff = file_diff("a.py", "one\ntwo\n", "one\nthree\nfour\n")
    assert (diff.added, diff.removed) == (2, 1)
    assert diff.unified.startswith("--- a/a.py\n+++ b/a.py\n")
    assert diff.before == "one\ntwo\n" and diff.after == "one\nthree\nfour\n"
    created = file_diff("new.py", None, "x\n")
    assert created.before is None and created.added == 1
    big = file_diff("big.txt", "", "z" * 300_000)
    assert big.after is None and big.unified


def test_acp_editor_mcp_servers_as_crab_mcp_settings() -> None:
    settings, skipped = server_settings(
        [
            McpServerStdio(name="fs tools", command="npx", args=["-y", "srv"], env=[EnvVariable(name="K", value="v")]),
            HttpMcpServer(
                type="http", name="docs", url="https://d.example/mcp", headers=[HttpHeader(name="A", value="b")]
            ),
            SseMcpServer(type="sse", name="docs", url="https://old.example/sse", headers=[]),
        ]
    )
    assert settings == {
        "plugins.mcp.servers.fs_tools": {"command": "npx", "args": ["-y", "srv"], "env": {"K": "v"}},
        "plugins.mcp.servers.docs": {"url": "https://d.example/mcp", "headers": {"A": "b"}},
        "plugins.mcp.servers.docs_": {"url": "https://old.example/sse", "transport": "sse"},
    }
    assert skipped == []
    assert server_settings(None) == ({}, [])
