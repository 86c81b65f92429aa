"""The loop guard's three detectors and their thresholds."""

from __future__ import annotations

from crab._builtin.loop_guard import LoopGuard, signature


def actions(guard: LoopGuard, calls: list[tuple[str, dict, str]]) -> list[str]:
    seen = []
    for name, args, result in calls:
        seen.append(guard.check(name, args).action)
        guard.record(name, args, result)
    return seen


def test_exact_repeat_warns_at_3_blocks_at_4_stops_at_5():
    calls = [("read", {"path": "a"}, "same")] * 5
    assert actions(LoopGuard(), calls) == ["ok", "ok", "warn", "block", "stop"]


def test_exact_repeat_uses_canonical_arguments():
    assert signature("read", {"a": 1, "b": 2}) == signature("read", {"b": 2, "a": 1})
    assert signature("read", {"a": 1}) != signature("grep", {"a": 1})


def test_ping_pong_warns_at_4_cycles_blocks_at_5_stops_at_6():
    a = ("read", {"path": "a"}, "A")
    b = ("read", {"path": "b"}, "B")
    got = actions(LoopGuard(), [a, b] * 6)
    assert got[:7] == ["ok"] * 7
    assert got[7] == "warn"  # 4th full A-B cycle
    assert got[9] == "block"
    assert got[11] == "stop"


def test_no_progress_same_result_with_different_arguments():
    calls = [("grep", {"pattern": f"p{i}"}, "no matches") for i in range(7)]
    got = actions(LoopGuard(), calls)
    assert got == ["ok", "ok", "ok", "ok", "warn", "block", "stop"]


def test_varied_work_never_trips():
    calls = [("read", {"path": f"f{i}"}, f"content {i}") for i in range(30)]
    assert set(actions(LoopGuard(), calls)) == {"ok"}
