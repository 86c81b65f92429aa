"""``crab_workspace``: a plugin chooses the folder a run works in before its agent exists; asked
for one (``--worktree``), crab never falls back to the folder it started in."""

from __future__ import annotations

import types
from pathlib import Path

import crab
import pytest
from crab._assembly.root import Layers, assemble
from crab.testing import ScriptedProvider


def build(workspace: Path, plugin: object | None, isolate: str | None):
    objects = {"chooser": plugin} if plugin is not None else {}
    return assemble(
        workspace=workspace,
        layers=Layers(user=False, project=False, environment=False),
        plugins=[],
        objects=objects,
        provider=ScriptedProvider([]),
        model="scripted",
        check_model=False,
        isolate=isolate,
    )


def chooser(folder: Path, seen: list[str | None]):
    def crab_workspace(workspace: Path, request: str | None) -> Path:
        seen.append(request)
        return folder

    return types.SimpleNamespace(crab_workspace=crab.hookimpl(crab_workspace))


def test_the_folder_a_plugin_gives_is_the_agents_workspace(tmp_path: Path) -> None:
    seen: list[str | None] = []
    built = build(tmp_path, chooser(tmp_path / "elsewhere", seen), "fix")
    assert built.agent.workspace == tmp_path / "elsewhere" and seen == ["fix"]
    built = build(tmp_path, chooser(tmp_path / "elsewhere", seen), None)  # the plugin's own choice
    assert built.agent.workspace == tmp_path / "elsewhere" and seen == ["fix", None]


def test_asked_for_and_given_none_is_a_usage_error(tmp_path: Path) -> None:
    assert build(tmp_path, None, None).agent.workspace == tmp_path
    with pytest.raises(crab.UsageError, match="no loaded plugin gives a separate workspace"):
        build(tmp_path, None, "")


def test_a_plugin_that_fails_to_choose_stops_the_run_with_its_line(tmp_path: Path) -> None:
    def crab_workspace(workspace: Path) -> Path:
        raise crab.UsageError("not a git repository")

    broken = types.SimpleNamespace(crab_workspace=crab.hookimpl(crab_workspace))
    with pytest.raises(crab.UsageError) as info:
        build(tmp_path, broken, "")
    assert str(info.value) == "plugin chooser failed: crab_workspace raised UsageError: not a git repository"


def test_a_plugin_that_fails_to_choose_unasked_stops_the_run_too(tmp_path: Path) -> None:
    """Without --worktree a plugin chooses from its settings (crab-worktree's ``enabled``: every run
    in a worktree): its failure is never a run in the folder the user set it up to keep out of."""

    def crab_workspace(workspace: Path, request: str | None) -> Path | None:
        raise crab.UsageError("git worktree add failed")

    broken = types.SimpleNamespace(crab_workspace=crab.hookimpl(crab_workspace))
    with pytest.raises(crab.UsageError) as info:
        build(tmp_path, broken, None)
    assert str(info.value) == "plugin chooser failed: crab_workspace raised UsageError: git worktree add failed"
