"""``WorktreeCreate`` and ``WorktreeRemove`` as crab-hooks offers them (``crab_worktree_hooks``, the
hook crab-worktree declares): real hook commands, the reference's input fields, Claude Code's rules
(the create hook's stdout is the folder, any failure fails the creation; remove decides nothing)."""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path
from typing import Any

import crab
import pytest
from crab_hooks.runtime import Hooks
from crab_hooks.worktrees import WorktreeEvents
from hooks_reference_examples import WORKTREE_CREATE_INPUT, WORKTREE_REMOVE_INPUT, fields


def events_with(tmp_path: Path, hooks: dict[str, list[str]]) -> WorktreeEvents:
    runtime = Hooks()
    raw = {event: [{"hooks": [{"type": "command", "command": c} for c in cs]}] for event, cs in hooks.items()}
    runtime.hooks.add(raw, "test", tmp_path, 30.0)
    return WorktreeEvents(runtime)


def logged(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_create_hook_makes_the_folder_instead_of_git_and_gets_the_references_fields(tmp_path: Path) -> None:
    log, made = tmp_path / "log.jsonl", tmp_path / "made"
    make = f"mkdir -p {shlex.quote(str(made))} && echo progress >&2 && echo {shlex.quote(str(made))}"
    hooks = events_with(tmp_path, {"WorktreeCreate": [make, f"cat >> {shlex.quote(str(log))}; echo >> {log}"]})
    assert asyncio.run(hooks.create("feature-auth", tmp_path, "s1")) == made
    [given] = logged(log)
    assert fields(WORKTREE_CREATE_INPUT) <= set(given)
    assert (given["name"], given["cwd"], given["session_id"]) == ("feature-auth", str(tmp_path), "s1")


def test_without_a_create_hook_git_makes_it(tmp_path: Path) -> None:
    assert asyncio.run(events_with(tmp_path, {}).create("x", tmp_path, "s1")) is None


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("echo no svn >&2; exit 1", "failed with exit code 1: no svn"),
        ("true", "the WorktreeCreate hooks printed nothing"),
        ("echo relative/dir", "printed 'relative/dir', which is no folder"),
    ],
)
def test_a_create_hook_that_fails_fails_the_creation(tmp_path: Path, command: str, said: str) -> None:
    with pytest.raises(crab.UsageError, match=said):
        asyncio.run(events_with(tmp_path, {"WorktreeCreate": [command]}).create("x", tmp_path, "s1"))


def test_remove_hooks_get_the_path_and_decide_nothing(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    record = f"cat >> {shlex.quote(str(log))}; echo >> {log}"
    hooks = events_with(tmp_path, {"WorktreeRemove": [record, "exit 2"]})
    gone = tmp_path / "wt"
    assert asyncio.run(hooks.remove(gone, tmp_path, "s1")) is None  # exit 2 blocks nothing
    [given] = logged(log)
    assert fields(WORKTREE_REMOVE_INPUT) <= set(given) and given["worktree_path"] == str(gone)
