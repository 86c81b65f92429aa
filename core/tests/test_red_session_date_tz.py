"""Red team (issue 38's invariant across processes): the session date in the system prompt is
read from the session id (UTC) but shown in the process's local time zone, so the same session
gets another system prompt, and every provider cache misses, when it is continued by a process
in another zone (``crab serve`` under a service manager's ``TZ=UTC``, the user's own ``crab chat
--resume``; a laptop that travelled). Found by reading ``crab._loop.turn.session_date``; the
session date is now the UTC date of the id."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from crab._loop.steps import session_date

LATE_EVENING_UTC = "20261206T230000-abcdef"


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    def set_zone(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


def test_the_session_date_is_the_same_in_every_time_zone(zone) -> None:
    dates = set()
    for name in ("UTC0", "KIR-14", "PST8"):  # POSIX zones: no tzdata needed
        zone(name)
        dates.add(session_date(LATE_EVENING_UTC))
    assert len(dates) == 1, f"one session, {len(dates)} dates in its system prompt: {sorted(dates)}"
