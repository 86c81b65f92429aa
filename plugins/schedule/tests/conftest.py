"""Fixtures of crab-schedule's tests. ``fakes``: test doubles for the scheduler's unit tests: a fake clock, and a stand-in for the agent handle
(records what the scheduler asks of it; every turn's outcome is chosen by the test)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import crab
import pytest
from crab_schedule.settings import ScheduleSettings


class FakeClock:
    def __init__(self, start: datetime | None = None) -> None:
        self.t = start or datetime(2026, 6, 1, 8, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.t

    def advance(self, **delta: float) -> None:
        self.t += timedelta(**delta)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(0)  # time only moves when the test moves it


def settings(path: Path, **changes: Any) -> ScheduleSettings:
    values: dict[str, Any] = {
        "path": path,
        "timezone": "UTC",
        "catch_up": timedelta(hours=1),
        "poll_interval": 0.01,
        "lease": timedelta(minutes=5),
        "min_interval": 60.0,
        "max_jobs": 200,
    }
    values.update(changes)
    return ScheduleSettings(**values)


@dataclass
class Outcome:
    text: str = ""
    stop: str = "end"
    error: str | None = None


@dataclass
class Session:
    id: str


@dataclass
class FakeHandle:
    """Duck-types the parts of ``crab.AgentHandle`` the scheduler uses."""

    outcome: Outcome | Exception = field(default_factory=lambda: Outcome("the answer"))
    channels: set[str] = field(default_factory=set)
    delivered: list[tuple[str, str, str]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    prompts: list[tuple[str, str]] = field(default_factory=list)
    config: Any = None

    def notice(self, message: str, level: str = "info") -> None:
        self.notices.append(message)

    async def deliver(self, channel: str, address: str, text: str) -> None:
        if channel not in self.channels:
            raise crab.ChannelError(f"no channel named {channel!r} runs in this crab serve")
        self.delivered.append((channel, address, text))

    async def session_for(self, channel: str, address: str, *, session_id: str | None = None) -> Session:
        return Session(f"{channel}:{address}")

    async def resume(self, session_id: str) -> Session:
        return Session(session_id)

    async def handle_input(self, session: Session, text: str) -> Outcome:
        self.prompts.append((session.id, text))
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


@pytest.fixture
def fakes() -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(FakeClock=FakeClock, FakeHandle=FakeHandle, Outcome=Outcome, settings=settings)
