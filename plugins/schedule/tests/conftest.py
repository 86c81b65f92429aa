"""Fixtures of crab-schedule's tests.

``fakes``: test doubles for the scheduler's unit tests (a fake clock; a stand-in for the agent
handle that records what the scheduler asks of it, each turn's outcome chosen by the test).
``crab_cmd``: the real ``crab`` command with crab-schedule, a scripted provider and ``fakechat``
(a chat channel standing in for Telegram), each ``crab serve`` it starts ended after the test.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import crab
import pytest
from crab.testing import ScriptedSite
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
    config: Any = field(default_factory=lambda: crab.Config({}, crab.config.crab_home() / "config.toml", None))
    offered: dict[str, list[Any]] = field(default_factory=dict)  # what collect(hook) finds, by hook
    events: list[Any] = field(default_factory=list)  # emitted to the turn's session during each turn
    listeners: dict[str, list[Any]] = field(default_factory=dict)

    def notice(self, message: str, level: str = "info") -> None:
        self.notices.append(message)

    def collect(self, hook: str) -> list[tuple[str, Any]]:
        return [("fake", found) for found in self.offered.get(hook, [])]

    def subscribe(self, listener: Any, *, session: Session | None = None) -> Any:
        assert session is not None, "the scheduler listens to the job's session only"
        self.listeners.setdefault(session.id, []).append(listener)
        return lambda: self.listeners[session.id].remove(listener)

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
        for event in self.events:
            for listener in list(self.listeners.get(session.id, [])):
                listener(event)
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


@pytest.fixture
def fakes() -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(FakeClock=FakeClock, FakeHandle=FakeHandle, Outcome=Outcome, settings=settings)


FAKE_SITE = Path(__file__).parent / "fake_site"
FAKE_CHAT = "crab_schedule_fake_chat"
WAIT = 60.0


class Crab:
    """Runs the real ``crab`` command (``python -m crab``) with crab-schedule and the fakes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.work = root / "work"
        self.chat = root / "chat"
        for folder in (self.home, self.work, self.chat):
            folder.mkdir(exist_ok=True)
        # crab.testing's scripted provider ``scripted`` and the chat channel ``fakechat`` beside it
        self.site = ScriptedSite(root, provider="scripted", models=("scripted",))
        self.site.add_plugin("fakechat", FAKE_CHAT, (FAKE_SITE / f"{FAKE_CHAT}.py").read_text(encoding="utf-8"))
        self.env = self.site.env(
            "scripted,schedule,fakechat", home=self.home, extra={"SCHEDULE_FAKE_CHAT_DIR": str(self.chat)}
        )
        (self.home / "config.toml").write_text('[plugins.schedule]\ntimezone = "UTC"\npoll_interval = 0.1\n')
        self.served: list[subprocess.Popen[str]] = []
        self._scripts = 0

    def script(self, replies: list[Any]) -> str:
        self._scripts += 1
        path = self.site.script(replies, loop=True, file=self.root / f"script{self._scripts}.json")
        return f"scripted/{path}"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "crab", *args],
            env=self.env,
            cwd=self.work,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def serve(self, replies: list[Any] | None = None, *extra: str) -> subprocess.Popen[str]:
        before = set(self.chat.glob("ready.*"))
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "crab",
                "serve",
                "schedule",
                "fakechat",
                "-m",
                self.script(replies or [[{"text": "-"}]]),
                *extra,
            ],
            env=self.env,
            cwd=self.work,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.served.append(proc)
        wait_until(lambda: set(self.chat.glob("ready.*")) - before, "crab serve to start", proc)
        return proc

    def stop(self, proc: subprocess.Popen[str]) -> tuple[int, str]:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=WAIT)
        return proc.returncode, stderr

    def store(self) -> Any:
        from crab_schedule.sqlite_store import SQLiteJobStore

        return SQLiteJobStore(self.home / "schedule.db")

    def records(self) -> list[Any]:
        if not (self.home / "schedule.db").exists():
            return []
        return asyncio.run(self.store().records(limit=1000))

    def jobs(self, include_finished: bool = True) -> list[Any]:
        if not (self.home / "schedule.db").exists():
            return []
        return asyncio.run(self.store().list(include_finished))


def wait_until(condition: Any, what: str, proc: subprocess.Popen[str] | None = None) -> Any:
    deadline = time.monotonic() + WAIT
    while True:
        value = condition()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"crab serve ended ({proc.returncode}) before {what}: {proc.stderr.read()}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def crab_cmd(tmp_path: Path) -> Any:
    """A ``Crab`` for the test; every ``crab serve`` it started is ended afterwards."""
    runner = Crab(tmp_path)
    yield runner
    for proc in runner.served:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
