"""``AgentHandle.run_child(..., workspace=)``: a child's tools and their ``ToolContext`` work in the
folder given (a worktree made for it), the parent's stay where they were, the child session is
listed under the parent's workspace, and a folder that does not exist is a ``ConfigError``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import crab
from crab.testing import AgentHarness


class Elsewhere:
    """``delegate`` runs a child in ``folder``, whose ``where`` tool says where it ran."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.outcomes: list[crab.ChildOutcome] = []
        self.seen: list[Path] = []

    @crab.hookimpl
    def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
        async def delegate(prompt: str, ctx: crab.ToolContext) -> str:
            """Run a child elsewhere."""
            assert ctx.handle is not None
            self.seen.append(Path(ctx.workspace))
            try:
                outcome = await ctx.handle.run_child(
                    ctx, prompt, label="away", tools=["where"], instructions="CHILD", workspace=self.folder
                )
            except crab.ConfigError as exc:
                return f"refused: {exc}"
            self.outcomes.append(outcome)
            return outcome.text

        def where(ctx: crab.ToolContext) -> str:
            """Say the workspace."""
            self.seen.append(Path(ctx.workspace))
            return str(ctx.workspace)

        return [crab.tool(delegate), crab.tool(where)]


def replies(request: crab.ModelRequest) -> list[dict[str, Any]]:
    done = any(isinstance(m, crab.messages.ToolResultMessage) for m in request.messages)
    if request.system.endswith("CHILD"):
        return [{"text": "child done"}] if done else [{"tool": "where", "id": "w1", "args": {}}]
    return [{"text": "parent done"}] if done else [{"tool": "delegate", "id": "d1", "args": {"prompt": "go"}}]


def test_a_child_given_a_workspace_works_there(tmp_path: Path) -> None:
    home, away = tmp_path / "home", tmp_path / "away"
    home.mkdir()
    away.mkdir()
    plugin = Elsewhere(away)
    h = AgentHarness(replies, plugins={"elsewhere": plugin}, workspace=home)
    try:
        assert h.run("go").text == "parent done"
        assert plugin.seen == [home.resolve(), away.resolve()]  # the parent's call, then the child's
        (child,) = plugin.outcomes
        info = h.run_async(h.store.get_session(child.session_id))
        assert Path(info.workspace) == home.resolve()  # listed where the user works
    finally:
        h.close()


def test_a_workspace_that_is_no_folder_is_refused(tmp_path: Path) -> None:
    plugin = Elsewhere(tmp_path / "missing")
    h = AgentHarness(replies, plugins={"elsewhere": plugin}, workspace=tmp_path)
    try:
        h.run("go")
        result = next(m for m in h.session.messages if isinstance(m, crab.messages.ToolResultMessage))
        assert (
            result.content
            == f"refused: run_child: the child's workspace {tmp_path / 'missing'} is not a folder (make it first)"
        )
        assert plugin.outcomes == []
    finally:
        h.close()
