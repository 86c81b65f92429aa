"""The coding guidance comes with the tools: in the system prompt when crab-tools-basic is
loaded, after core's part and the instruction files, and absent from a setup without it."""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import crab
import crab_tools_basic
from crab_tools_basic.guidance import GUIDANCE


def test_the_guidance_is_in_the_prompt_with_the_tools(crab_agent: Callable[..., Any]) -> None:
    (Path.cwd() / "AGENTS.md").write_text("Run the tests with make test.\n")
    h = crab_agent([[{"text": "ok"}]], plugins={"tools-basic": crab_tools_basic})
    h.run("hello")
    system = h.requests[0].system
    assert GUIDANCE in system
    assert {spec.name for spec in h.requests[0].tools} == {
        "read",
        "write",
        "edit",
        "bash",
        "bash_output",
        "bash_kill",
        "glob",
        "grep",
        "ls",
    }
    # Core's prompt first, then the instruction files, then this plugin's part.
    assert system.index("# Tools") < system.index("make test") < system.index("# Working on code")


def test_a_setup_without_the_tools_carries_no_guidance(crab_agent: Callable[..., Any]) -> None:
    # A chat bot or a scheduled job with a tool of its own: core's prompt only.
    @crab.tool
    def remind(text: str) -> str:
        """Send a reminder."""
        return text

    bot = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [remind]))
    h = crab_agent([[{"text": "ok"}]], plugins={"bot": bot})
    h.run("hello")
    system = h.requests[0].system
    assert system.startswith("You are crab") and "# Finishing a turn" in system
    assert "# Working on code" not in system and "git reset --hard" not in system


def test_the_guidance_names_what_the_issue_asks_for() -> None:
    # The points the guidance must make (issue 31): each is a phrase a reviewer can find.
    for phrase in (
        "already used in the project",
        "smallest change",
        "narrowest first",
        "say what you could not run",
        "never revert what you did not change",
        "git reset --hard",
        "--no-verify",
        "stage files by name",
        "do not retry the same call",
        "`&&`",
        "`path:line`",
        "Never paste whole files",
    ):
        assert phrase in GUIDANCE, phrase
