"""``isolation`` in agent files, and finding the plugin that offers it (``crab_child_workspaces``):
an agent asking for a folder of its own never silently shares the parent's."""

from __future__ import annotations

from pathlib import Path

import crab
import pytest
from crab_subagents.definitions import read_agent
from crab_subagents.isolation import offered


class Copies:
    """Another plugin's offer, of the shape ``ChildWorkspaces`` asks for."""

    name = "copy"

    async def enter(self, workspace: Path, label: str, session_id: str) -> Path:
        return workspace

    async def leave(self, folder: Path) -> str:
        return "left"


def test_an_agent_file_names_its_isolation_as_claude_codes_do(tmp_path: Path, write_agent) -> None:
    agent, notes = read_agent(write_agent(tmp_path, "w", "name: w\ndescription: d\nisolation: worktree"), "user")
    assert agent.isolation == "worktree" and notes == []
    plain, _ = read_agent(write_agent(tmp_path, "p", "name: p\ndescription: d\nisolation: none"), "user")
    assert plain.isolation is None
    odd, notes = read_agent(write_agent(tmp_path, "o", "name: o\ndescription: d\nisolation: ../x y"), "user")
    assert odd.isolation is None and notes == ["isolation '../x y' ignored: it is a name such as `worktree`"]


def test_the_first_offer_of_the_name_is_used_and_none_is_an_error_saying_what_to_install() -> None:
    copies = Copies()
    assert offered([("a", None), ("b", [object(), copies])], "copy") is copies
    with pytest.raises(crab.ToolError) as raised:
        offered([("b", [copies])], "worktree")
    assert str(raised.value) == (
        "this agent asks for isolation 'worktree' and no plugin offers it (offered: copy): "
        "install crab-worktree for `worktree`, or remove `isolation` from the agent file"
    )
