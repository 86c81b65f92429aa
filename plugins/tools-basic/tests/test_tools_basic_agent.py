"""The tools inside a real agent loop: settings and the read gate's state reach them per session."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import crab_tools_basic
from crab.messages import ToolResultMessage


def test_read_edit_and_bash_through_the_loop(crab_agent: Callable[..., Any], crab_home: Path) -> None:
    workspace = Path.cwd()
    (workspace / "notes.txt").write_text("status: draft\r\n")
    h = crab_agent(
        [
            [{"tool": "edit", "args": {"path": "notes.txt", "old": "draft", "new": "final"}}],
            [{"tool": "read", "args": {"path": "notes.txt"}}],
            [{"tool": "edit", "args": {"file_path": "notes.txt", "oldText": "draft", "newText": "final"}}],
            [{"tool": "bash", "args": {"command": "cat notes.txt"}}],
            [{"text": "done"}],
        ],
        plugins={"tools-basic": crab_tools_basic},
        config={"crab.permissions": "yolo", "plugins.tools-basic.output_dir": str(crab_home / "logs")},
    )
    outcome = h.run("finish the notes")
    assert outcome.text == "done"
    results = [m for m in h.requests[-1].messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [True, False, False, False]
    assert "not read in this session" in results[0].content
    assert results[1].content == "     1\tstatus: draft"
    assert results[2].content == "edited notes.txt: 1 replacement (line 1)"
    assert results[3].content == "status: final\r\n[exit code 0]"
    assert (workspace / "notes.txt").read_bytes() == b"status: final\r\n"


def test_slash_tools_lists_whole_sentences(crab_agent: Callable[..., Any]) -> None:
    # glob's description wraps in its docstring: /tools cut it at the line end ("with `/` it").
    h = crab_agent([], plugins={"tools-basic": crab_tools_basic})
    lines = {line.split()[0]: line for line in h.run("/tools").text.splitlines()}
    assert lines["glob"].endswith("ls lists one folder instead."), lines["glob"]
