"""The pieces of ``crab mcp serve``'s prompts and resources that need no server: which prompts
are kept, what a bad request is told, and which URIs reach the read tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from crab_mcp import serve_prompts
from crab_mcp.serve_resources import path_of


def echo(arguments: Any) -> str:
    return f"topic: {arguments.get('topic', '')}"


def test_prompts_keep_the_first_of_a_name_and_leave_out_malformed_ones(capsys):
    found = serve_prompts.gather(
        [
            ("a", [{"name": "review", "description": "A's", "render": echo}, {"description": "no name"}]),
            ("b", [{"name": "review", "description": "B's", "render": echo}, {"name": "x", "render": "not callable"}]),
            ("c", None),
        ]
    )
    assert list(found) == ["review"] and found["review"].plugin == "a"
    err = capsys.readouterr().err
    assert "plugin a offered a malformed prompt" in err and "plugin b offered a prompt without name or render" in err


def test_get_names_what_is_wrong_and_cuts_a_huge_text():
    from mcp import MCPError

    prompts = serve_prompts.gather(
        [
            (
                "a",
                [
                    {"name": "needs", "arguments": [{"name": "topic", "required": True}], "render": echo},
                    {"name": "huge", "render": lambda args: "x" * (serve_prompts.MAX_TEXT + 10)},
                    {"name": "broken", "render": lambda args: 1 / 0},
                ],
            )
        ]
    )
    assert serve_prompts.get(prompts, "needs", {"topic": "docs"}).messages[0].content.text == "topic: docs"
    for name, arguments, why in [
        ("needs", {}, "prompt 'needs' needs the argument(s) topic"),
        ("nope", {}, "no prompt 'nope' (offered: broken, huge, needs)"),
        ("broken", {}, "prompt 'broken' failed: ZeroDivisionError"),
    ]:
        with pytest.raises(MCPError) as refused:
            serve_prompts.get(prompts, name, arguments)
        assert why in refused.value.message
    text = serve_prompts.get(prompts, "huge", None).messages[0].content.text
    assert text.endswith(f"[… cut at {serve_prompts.MAX_TEXT:,} characters]")


def test_only_file_uris_reach_the_read_tool_and_the_workspace_is_relative(tmp_path: Path):
    class Box:
        workspace = tmp_path

    box: Any = Box()
    assert path_of(box, (tmp_path / "a b.txt").as_uri()) == "a b.txt"
    assert path_of(box, "file:///etc/passwd") == "/etc/passwd"  # the read tool refuses it
    for uri in ("https://example.invalid/a", "file://other-host/etc/passwd", "demo://x"):
        with pytest.raises(ValueError, match="not a file:// URI"):
            path_of(box, uri)
