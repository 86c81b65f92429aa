"""What crab-lsp's tests share besides fixtures: a ``write`` tool and a server table."""

from __future__ import annotations

from pathlib import Path

import crab


def server_table(command: list[str], patterns: list[str]) -> dict[str, object]:
    return {"command": command[0], "args": command[1:], "patterns": patterns}


class FakeWrite:
    """``write`` and ``edit`` as crab-tools-basic names them: write the file, say so."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace

    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        workspace = self.workspace

        @crab.tool(name="write", permission="read")
        def write(path: str, content: str) -> str:
            """Write a file."""
            (workspace / path).parent.mkdir(parents=True, exist_ok=True)
            (workspace / path).write_text(content, encoding="utf-8")
            return f"wrote {path}"

        return [write]
