"""The system prompt and the first request's tool list for a typical plugin set (core and
crab-tools-basic: core's prompt, then the coding guidance of crab-tools-basic), rendered with a
fixed date and workspace and compared with ``tests/snapshots/system_prompt.txt``: agent quality
lives in this text, so every change to it is a reviewed diff. Its size is held to a budget.

After an intended change, rewrite the snapshot and review the diff before committing::

    UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_system_prompt_snapshot.py
    git diff tests/snapshots/system_prompt.txt
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import crab_tools_basic
import pytest
from crab._builtin import prompt
from crab._values.budget import raw_tokens, schema_tokens

SNAPSHOT = Path(__file__).parent / "snapshots" / "system_prompt.txt"
SKILLS_SNAPSHOT = Path(__file__).parent / "snapshots" / "system_prompt_skills.txt"
WORKSPACE = "/home/user/project"
FIRST_REQUEST_BUDGET = 1350
"""Issue 31's 1,200, raised for issue 38: a stub now carries its parameters' names and types (so a
model can call a tool without a step that fetches its schema, and the list never changes)."""


def render(h) -> str:
    request = h.requests[0]
    system = request.system.replace(str(h.workspace), WORKSPACE)
    tools = "\n".join(
        json.dumps({"name": s.name, "description": s.description, "parameters": s.parameters}, ensure_ascii=False)
        for s in request.tools
    )
    full = schema_tokens([tool.spec() for tool in h.agent.tools.values()])
    sent = schema_tokens(request.tools)
    prompt_tokens = raw_tokens(len(system))
    return (
        f"==== system prompt ====\n{system}\n"
        f"==== tools in the first request (progressive view) ====\n{tools}\n"
        f"==== estimated schema tokens: {sent} progressive, {full} full ====\n"
        f"==== first request: {prompt_tokens + sent} tokens (system prompt {prompt_tokens}, tool stubs {sent}) ====\n"
    )


def first_request_tokens(h) -> int:
    """The estimated tokens of the first request's system prompt and tool list (no messages),
    with the workspace's path as the snapshot shows it (a temporary folder's varies)."""
    request = h.requests[0]
    return raw_tokens(len(request.system.replace(str(h.workspace), WORKSPACE))) + schema_tokens(request.tools)


def check(text: str, snapshot: Path) -> None:
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(text, encoding="utf-8")
    assert snapshot.exists(), "no snapshot yet: run with UPDATE_SNAPSHOTS=1 and review it"
    assert text == snapshot.read_text(encoding="utf-8"), (
        "the system prompt changed: if intended, run with UPDATE_SNAPSHOTS=1 and review the diff"
    )


def test_the_system_prompt_matches_its_snapshot(crab_agent, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prompt, "session_date", lambda session_id: "2026-01-15")
    h = crab_agent([[{"text": "ok"}]], plugins={"tools-basic": crab_tools_basic})
    h.run("hello")
    check(render(h), SNAPSHOT)


def test_the_first_request_with_tools_basic_stays_within_its_budget(crab_agent) -> None:
    """Issue 31's budget: core's prompt, the coding guidance and the stubs together at most
    ``FIRST_REQUEST_BUDGET`` estimated tokens (characters / 4, as the token budget counts), in a workspace with no
    instruction files; ``bench/context.py`` prints the figure."""
    h = crab_agent([[{"text": "ok"}]], plugins={"tools-basic": crab_tools_basic})
    h.run("hello")
    assert first_request_tokens(h) <= FIRST_REQUEST_BUDGET


def test_the_prompt_with_skills_matches_its_snapshot(
    crab_agent, crab_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """crab-skills' section comes after core's prompt and the instruction files, and its tool is a
    stub like every other."""
    crab_skills = pytest.importorskip("crab_skills")
    skill = crab_home / "skills" / "pdf"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: pdf\ndescription: Extract text from PDF files.\n---\nUse pdftotext.\n")
    (Path(os.getcwd()) / "AGENTS.md").write_text("Run the tests with make test.\n")
    monkeypatch.setattr(prompt, "session_date", lambda session_id: "2026-01-15")
    plugins = {"tools-basic": crab_tools_basic, "skills": crab_skills.SkillsPlugin()}
    h = crab_agent([[{"text": "ok"}]], plugins=plugins)
    h.run("hello")
    check(render(h), SKILLS_SNAPSHOT)
