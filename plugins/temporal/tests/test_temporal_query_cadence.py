"""How often the client queries a turn's workflow: every poll until a worker has the turn and right
after the store changed, then less and less often while nothing changes (a query costs a workflow
task on a worker and the server's CPU; the store costs them nothing)."""

from __future__ import annotations

import itertools

from crab_temporal.client import POLL, QUERY_EVERY, QueryCadence


def queries_over(seconds: float, *, answered_after: float = 0.0, stored_at: tuple[float, ...] = ()) -> list[float]:
    """The times a client polling every ``POLL`` seconds queries the workflow."""
    cadence, times, now = QueryCadence(), [], 0.0
    while now < seconds:
        now = round(now + POLL, 6)
        fresh = any(now - POLL < at <= now for at in stored_at)
        if cadence.due(now, fresh):
            times.append(now)
            cadence.queried(now, fresh, answered=now >= answered_after)
    return times


def test_a_long_quiet_tool_call_is_queried_about_once_a_second_not_five_times():
    times = queries_over(60.0)
    assert len(times) <= 60 / QUERY_EVERY + 5  # every 0.2 s would be 300
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert max(gaps) <= QUERY_EVERY + POLL  # a question is shown at most about a second late


def test_until_a_worker_has_the_turn_every_poll_queries():
    times = queries_over(3.0, answered_after=2.0)
    assert [t for t in times if t < 2.0] == [round(POLL * i, 6) for i in range(1, 10)]


def test_a_change_in_the_store_is_queried_at_once_and_the_next_poll_again():
    times = queries_over(10.0, stored_at=(5.05,))
    assert 5.2 in times  # the poll that saw the stored reply: its calls' questions come now
    assert 5.4 in times
