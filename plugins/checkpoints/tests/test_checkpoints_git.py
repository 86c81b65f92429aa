"""In a git work tree: a turn's changes are undone, and the user's branch, index and stash are
exactly as they were (status, stash list, refs, the index file's bytes), with staged and
unstaged work of the user's present throughout."""

from __future__ import annotations

from pathlib import Path

import crab

TURN_1 = [
    [{"tool": "put", "args": {"path": "a.txt", "content": "a by turn 1\n"}}],
    [{"tool": "put", "args": {"path": "new/deep/n.txt", "content": "made by turn 1\n"}}],
    [{"text": "done 1"}],
]
TURN_2 = [
    [{"tool": "sh", "args": {"command": "echo 'by turn 2' >> c.txt && rm notes.txt"}}],
    [{"tool": "put", "args": {"path": "b.txt", "content": "b by turn 2\n"}}],
    [{"text": "done 2"}],
]


def output(outcome: crab.steps.TurnOutcome) -> str:
    return outcome.text or ""


def test_undo_puts_back_each_turn_and_leaves_branch_index_and_stash_alone(repo: Path, agent, view, contents) -> None:
    before = view(repo)
    start = contents(repo)
    h = agent([*TURN_1, *TURN_2], repo)
    h.run("turn one")
    after_one = contents(repo)
    h.run("turn two")
    assert contents(repo)["c.txt"] == "c unstaged\nby turn 2\n" and "notes.txt" not in contents(repo)

    said = output(h.run("/undo"))
    assert said == "undid the last turn ('turn two'): restored b.txt, c.txt, notes.txt"
    assert contents(repo) == after_one
    said = output(h.run("/undo"))
    assert said == "undid the last turn ('turn one'): restored a.txt; removed new/deep/n.txt"
    assert contents(repo) == start
    assert not (repo / "new").exists()  # the folders the turn made are gone too
    assert view(repo) == before
    assert output(h.run("/undo")).startswith("nothing to undo")


def test_undo_2_goes_back_two_turns_at_once(repo: Path, agent, view, contents) -> None:
    before, start = view(repo), contents(repo)
    h = agent([*TURN_1, [{"tool": "put", "args": {"path": "a.txt", "content": "again\n"}}], [{"text": "ok"}]], repo)
    h.run("one")
    h.run("two")
    assert output(h.run("/undo 2")) == "undid 2 turns ('two', 'one'): restored a.txt; removed new/deep/n.txt"
    assert contents(repo) == start and view(repo) == before


def test_a_hand_edit_after_the_turn_is_never_lost(repo: Path, agent, contents) -> None:
    h = agent(TURN_1, repo)
    h.run("turn one")
    (repo / "a.txt").write_text("my own edit\n")
    shown = contents(repo)
    outcome = h.run("/undo")
    assert outcome.error is not None
    assert "not undone: a.txt is not as the turn 'turn one' left it (it was changed since)" in outcome.error
    assert contents(repo) == shown  # nothing written, not even the other file of the turn
    (repo / "a.txt").write_text("a by turn 1\n")  # put back as the turn left it: now it undoes
    assert output(h.run("/undo")).startswith("undid the last turn")


def test_a_hand_edit_between_two_turns_stops_undo_2_but_not_undo_1(repo: Path, agent, contents) -> None:
    h = agent([*TURN_1, [{"tool": "put", "args": {"path": "a.txt", "content": "two\n"}}], [{"text": "ok"}]], repo)
    h.run("one")
    (repo / "new" / "deep" / "n.txt").write_text("edited by hand between turns\n")
    h.run("two")
    outcome = h.run("/undo 2")
    assert outcome.error is not None and "new/deep/n.txt" in outcome.error
    assert output(h.run("/undo")) == "undid the last turn ('two'): restored a.txt"
    assert contents(repo)["new/deep/n.txt"] == "edited by hand between turns\n"


def test_checkpoints_are_private_refs_with_the_turn_as_label(repo: Path, agent, git) -> None:
    h = agent(TURN_1, repo)
    h.run("turn one")
    refs = git(repo, "for-each-ref", "--format=%(refname) %(subject)", "refs/crab/").splitlines()
    assert refs == [f"refs/crab/checkpoints/{h.session.id}/000001 crab checkpoint: turn one"]
    parent = git(repo, "rev-parse", f"refs/crab/checkpoints/{h.session.id}/000001^")
    assert git(repo, "rev-parse", f"{parent.strip()}^") == git(repo, "rev-parse", "HEAD")


def test_a_turn_that_writes_nothing_takes_no_checkpoint(repo: Path, agent, git) -> None:
    h = agent([[{"text": "just talking"}]], repo)
    h.run("hello")
    assert git(repo, "for-each-ref", "refs/crab/") == ""


def test_undo_waits_for_no_turn_and_checks_its_argument(repo: Path, agent) -> None:
    h = agent([], repo)
    assert h.run("/undo two").error == "usage: /undo [N] (N: how many turns to go back, 1 or more)"
    assert h.run("/undo 0").error is not None


def test_a_checkpoint_that_fails_never_refuses_the_call(repo: Path, agent, monkeypatch) -> None:
    from crab_checkpoints.git_store import GitCheckpoints

    async def broken(self, label: str) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(GitCheckpoints, "begin", broken)
    h = agent(TURN_1, repo)
    h.run("turn one")
    assert (repo / "a.txt").read_text() == "a by turn 1\n"
    results = [e.content for e in h.events_of(crab.events.ToolResultEvent)]
    assert results == ["wrote a.txt", "wrote new/deep/n.txt"]
    (warning,) = [e.message for e in h.events_of(crab.events.NoticeEvent) if e.message.startswith("checkpoints:")]
    assert warning == "checkpoints: RuntimeError: disk on fire; /undo may not cover this turn"
