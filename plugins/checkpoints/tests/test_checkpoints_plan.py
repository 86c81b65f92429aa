"""``plan_undo``: newest first, all or nothing, refusing on the first file not as its turn left it."""

from __future__ import annotations

import pytest
from crab_checkpoints.plan import Change, Checkpoint, UndoRefused, plan_undo


def test_files_go_back_to_the_oldest_state_of_the_turns_undone() -> None:
    older = Checkpoint("1", "one", (Change("a", "a0", "a1"), Change("new", None, "n1")))
    newer = Checkpoint("2", "two", (Change("a", "a1", "a2"), Change("b", "b0", None)))
    assert plan_undo([newer, older], {"a": "a2", "new": "n1"}) == {"a": "a0", "b": "b0", "new": None}


@pytest.mark.parametrize(
    ("now", "why"),
    [
        ({"a": "mine"}, "it was changed since"),
        ({}, "it was deleted since"),
    ],
)
def test_a_file_not_as_the_turn_left_it_refuses_everything(now: dict[str, str], why: str) -> None:
    with pytest.raises(UndoRefused, match=f"a is not as the turn 'one' left it \\({why}\\)"):
        plan_undo([Checkpoint("1", "one", (Change("a", "a0", "a1"),))], now)


def test_a_deleted_file_made_again_is_refused() -> None:
    with pytest.raises(UndoRefused, match="created again since"):
        plan_undo([Checkpoint("1", "one", (Change("gone", "g0", None),))], {"gone": "mine"})


def test_a_change_between_two_turns_stops_undoing_past_it() -> None:
    older = Checkpoint("1", "one", (Change("a", "a0", "a1"),))
    newer = Checkpoint("2", "two", (Change("a", "edited", "a2"),))  # the user edited a between the turns
    with pytest.raises(UndoRefused, match="'one'"):
        plan_undo([newer, older], {"a": "a2"})
    assert plan_undo([newer], {"a": "a2"}) == {"a": "edited"}


def test_nothing_is_written_through_a_symlink_leading_outside(tmp_path) -> None:
    from crab_checkpoints.plan import refuse_outside

    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "inner").mkdir()
    refuse_outside(root, ["inner/a.txt", "new/b.txt", "c.txt"])
    (root / "link").symlink_to(outside)
    with pytest.raises(UndoRefused, match=r"link/a\.txt would be written through a symlink"):
        refuse_outside(root, ["c.txt", "link/a.txt"])
