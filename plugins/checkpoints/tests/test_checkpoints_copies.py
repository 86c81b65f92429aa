"""Outside git: the files a turn's write calls name are copied before they change, /undo writes the
copies back, a hand edit is never overwritten, and the copies are bounded."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "keep.txt").write_text("original\n")
    return root


REPLIES = [
    [{"tool": "put", "args": {"path": "keep.txt", "content": "changed\n"}}],
    [{"tool": "put", "args": {"path": "made.txt", "content": "new\n"}}],
    [{"text": "ok"}],
    [{"tool": "put", "args": {"path": "keep.txt", "content": "changed twice\n"}}],
    [{"text": "ok"}],
]


def test_undo_outside_git_restores_copies_and_removes_new_files(folder: Path, agent, contents) -> None:
    start = contents(folder)
    h = agent(REPLIES, folder)
    h.run("first")
    h.run("second")
    assert contents(folder) == {"keep.txt": "changed twice\n", "made.txt": "new\n"}
    assert h.run("/undo").text == "undid the last turn ('second'): restored keep.txt"
    assert h.run("/undo").text == "undid the last turn ('first'): restored keep.txt; removed made.txt"
    assert contents(folder) == start
    assert not any((folder.parent / "home" / "checkpoints").rglob("manifest.json"))  # undone: dropped


def test_undo_2_outside_git(folder: Path, agent, contents) -> None:
    start = contents(folder)
    h = agent(REPLIES, folder)
    h.run("first")
    h.run("second")
    assert h.run("/undo 2").text == "undid 2 turns ('second', 'first'): restored keep.txt; removed made.txt"
    assert contents(folder) == start


def test_a_hand_edit_is_refused_outside_git_too(folder: Path, agent, contents) -> None:
    h = agent(REPLIES[:3], folder)
    h.run("first")
    (folder / "made.txt").unlink()
    outcome = h.run("/undo")
    assert (
        outcome.error is not None
        and "made.txt is not as the turn 'first' left it (it was deleted since)" in outcome.error
    )
    assert contents(folder)["keep.txt"] == "changed\n"  # nothing written


def test_a_file_over_the_limit_is_not_copied_and_its_turn_not_undone(folder: Path, agent, contents) -> None:
    (folder / "keep.txt").write_text("x" * 100)
    h = agent(REPLIES[:3], folder, max_file_bytes=10)
    h.run("first")
    outcome = h.run("/undo")
    assert outcome.error is not None and "keep.txt was larger than max_file_bytes" in outcome.error
    assert contents(folder)["keep.txt"] == "changed\n"


def test_only_keep_checkpoints_are_kept(folder: Path, agent, tmp_path: Path) -> None:
    turns = []
    for n in range(4):
        turns += [[{"tool": "put", "args": {"path": "keep.txt", "content": f"v{n}\n"}}], [{"text": "ok"}]]
    h = agent(turns, folder, keep=2)
    for n in range(4):
        h.run(f"turn {n}")
    kept = sorted(p.parent.name for p in (tmp_path / "home" / "checkpoints").rglob("manifest.json"))
    assert kept == ["000003", "000004"]
    assert h.run("/undo 2").text == "undid 2 turns ('turn 3', 'turn 2'): restored keep.txt"
    assert (folder / "keep.txt").read_text() == "v1\n"
    assert h.run("/undo").text.startswith("nothing to undo")


def test_exec_calls_take_no_copies_outside_git(folder: Path, agent) -> None:
    h = agent([[{"tool": "sh", "args": {"command": "echo hi > by-shell.txt"}}], [{"text": "ok"}]], folder)
    h.run("shell")
    assert h.run("/undo").text.startswith("nothing to undo")
    assert (folder / "by-shell.txt").exists()
