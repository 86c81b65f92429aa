"""Fixtures: a home of its own (no real ``~/.claude`` or ``$CRAB_HOME`` is ever read), hook scripts
written as files, and a test tool named ``bash`` that says what it would run.

The tool stands in for crab-tools-basic's ``bash`` (a plugin's tests run with only core and that
plugin installed): what matters here is the name and arguments the hooks see and change.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import crab
import pytest

SCRIPTS = Path(__file__).parent / "scripts"
sys.path.insert(0, str(Path(__file__).parent))  # hooks_reference_examples, by its unique name (importlib mode)


@pytest.fixture(autouse=True)
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    (home / ".claude").mkdir(parents=True)
    (home / ".crab").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CRAB_HOME", str(home / ".crab"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


def command_for(path: Path) -> str:
    """The shell command that runs the Python script at ``path`` with this interpreter."""
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


@pytest.fixture
def hook_script(tmp_path: Path) -> Callable[[str, str], str]:
    """``hook_script(name, body)`` writes a Python hook script and returns the command running it."""

    def write(name: str, body: str) -> str:
        path = tmp_path / "hooks" / f"{name}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text("import json, os, sys\n" + body, encoding="utf-8")
        return command_for(path)

    return write


@pytest.fixture
def validator() -> str:
    """Claude Code's bash command validator example (``scripts/bash_command_validator.py``)."""
    return command_for(SCRIPTS / "bash_command_validator.py")


class FakeBash:
    """A plugin with one tool, ``bash``, that answers with the arguments it got (it runs nothing)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        calls = self.calls

        @crab.tool(name="bash")
        def bash(command: str, timeout: float | None = None) -> str:
            """Say what would run."""
            calls.append({"command": command, "timeout": timeout})
            return f"ran: {command}"

        return [bash]


@pytest.fixture
def fake_bash() -> FakeBash:
    return FakeBash()
