"""crab-lsp with real language servers in a real agent (scripted provider): ``ruff server`` and
``pylsp`` for Python, ``typescript-language-server`` for TypeScript. An edit's new diagnostics
join its result (errors first); the tools answer from the servers."""

from __future__ import annotations

from pathlib import Path

import pytest
from crab.events import ToolResultEvent
from crab.testing import AgentHarness
from crab_lsp import LspPlugin
from lsp_support import FakeWrite, server_table

pytestmark = pytest.mark.slow


def _harness(servers: dict[str, object], replies: list[object], workspace: Path, **more: object) -> AgentHarness:
    config: dict[str, object] = {"plugins.lsp.servers": servers, "plugins.lsp.diagnostics_wait": 60.0, **more}
    return AgentHarness(
        replies, plugins={"lsp": LspPlugin(), "fake": FakeWrite(workspace)}, config=config, workspace=workspace
    )


def _call(tool: str, **args: object) -> list[object]:
    return [{"tool": tool, "args": args}]


def _results(harness: AgentHarness) -> list[ToolResultEvent]:
    return harness.events_of(ToolResultEvent)


UNUSED_PY = "import os\n"
BROKEN_PY = "import os\n\ndef f(:\n    pass\n"
GOOD_PY = "import os\n\nprint(os.sep)\n"


def test_ruff_diagnostics_join_each_write_and_go_when_fixed(ruff, tmp_path):
    replies = [
        _call("write", path="pkg/a.py", content=UNUSED_PY),
        _call("write", path="pkg/a.py", content=BROKEN_PY),
        _call("write", path="pkg/a.py", content=GOOD_PY),
        [{"text": "done"}],
    ]
    harness = _harness({"ruff": server_table(ruff, ["*.py"])}, replies, tmp_path)
    try:
        harness.run("write it")
        unused, broken, fixed = _results(harness)
        assert unused.content == (
            "wrote pkg/a.py\n\nruff diagnostics for pkg/a.py (1 warning):\n"
            "pkg/a.py:1:8: warning: `os` imported but unused help: Remove unused import: `os` [Ruff F401]"
        )
        lines = broken.content.splitlines()
        assert lines[2].startswith("ruff diagnostics for pkg/a.py (")
        assert lines[3].startswith("pkg/a.py:3:7: error: ") and "invalid-syntax" in lines[3]
        assert fixed.content == "wrote pkg/a.py"  # clean: nothing added
    finally:
        harness.close()


def test_pylsp_diagnostics_and_navigation(pylsp, tmp_path):
    (tmp_path / "lib.py").write_text('def greet(name):\n    """Say hello."""\n    return "hi " + name\n')
    (tmp_path / "main.py").write_text("from lib import greet\n\nprint(greet('x'))\nprint(greet('y'))\n")
    replies = [
        _call("write", path="bad.py", content="import os\nundefined_name\n"),  # a warning, then an error
        _call("definition", path="main.py", line=3, column=8),
        _call("references", path="lib.py", line=1, column=6),
        _call("hover", path="main.py", line=3, column=8),
        _call("symbols", path="lib.py"),
        [{"text": "done"}],
    ]
    harness = _harness({"pylsp": server_table(pylsp, ["*.py"])}, replies, tmp_path)
    try:
        harness.run("look")
        wrote, definition, references, hover, symbols = _results(harness)
        assert wrote.content.splitlines()[2:] == [
            "pylsp diagnostics for bad.py (1 error, 1 warning):",
            "bad.py:2:1: error: undefined name 'undefined_name' [pyflakes]",
            "bad.py:1:1: warning: 'os' imported but unused [pyflakes]",
        ]  # errors first
        assert not definition.is_error and definition.content.startswith("lib.py:1:5: def greet(name):")
        assert "main.py:3:7" in references.content and "main.py:4:7" in references.content
        assert "Say hello." in hover.content
        assert symbols.content.splitlines()[0].startswith("function greet")
    finally:
        harness.close()


def test_typescript_language_server_diagnostics_and_navigation(typescript, tmp_path):
    (tmp_path / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}, "include": ["*.ts"]}\n')
    (tmp_path / "util.ts").write_text("export function twice(n: number): number {\n  return n * 2;\n}\n")
    replies = [
        _call("write", path="main.ts", content='import { twice } from "./util";\nconst x: string = twice(2);\n'),
        _call("definition", path="main.ts", line=2, column=19),
        _call("hover", path="main.ts", line=2, column=19),
        _call("symbols", path="util.ts"),
        [{"text": "done"}],
    ]
    servers = {"typescript": {**server_table(typescript, ["*.ts", "*.tsx"]), "settle": 5.0}}  # syntax, then types
    harness = _harness(servers, replies, tmp_path)
    try:
        harness.run("look")
        wrote, definition, hover, symbols = _results(harness)
        assert "typescript diagnostics for main.ts (1 error, 1 hint):" in wrote.content
        assert "main.ts:2:7: error: Type 'number' is not assignable to type 'string'." in wrote.content
        assert definition.content.startswith("util.ts:1:17: export function twice")
        assert "twice(n: number): number" in hover.content
        assert symbols.content.startswith("function twice")
    finally:
        harness.close()


def test_the_diagnostics_tool_reads_a_file_as_it_is(ruff, tmp_path):
    (tmp_path / "a.py").write_text(UNUSED_PY)
    (tmp_path / "notes.md").write_text("# notes\n")
    replies = [_call("diagnostics", path="a.py"), _call("diagnostics", path="notes.md"), [{"text": "d"}]]
    harness = _harness({"ruff": server_table(ruff, ["*.py"])}, replies, tmp_path)
    try:
        harness.run("check")
        found, other = _results(harness)
        assert "ruff diagnostics for a.py" in found.content and "F401" in found.content
        assert other.is_error and other.content.startswith("no language server takes notes.md (configured: ruff)")
    finally:
        harness.close()
