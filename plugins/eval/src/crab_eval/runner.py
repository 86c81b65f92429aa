"""One eval run: a task's fixture copied into a fresh workspace, its prompts run by ``crab run``, judged.

Each prompt is one real ``crab run --output jsonl`` in the workspace (the later ones continue
the first one's session, which the configured store keeps for ``crab replay``); what the events
say becomes the run's record: tokens, cost, model and tool calls, tool errors, wall time.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from crab_eval.configs import Configuration
from crab_eval.judging import judge
from crab_eval.processes import run_bounded
from crab_eval.suite import Task


@dataclass
class RunRecord:
    """What one run did and how it was judged (a line of ``runs.jsonl``)."""

    key: str
    task: str
    config: str
    fingerprint: str
    repetition: int
    passed: bool = False
    reasons: list[str] = field(default_factory=list)
    session: str | None = None
    workspace: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float | None = None
    wall_seconds: float = 0.0
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    stop: str | None = None
    error: str | None = None
    answer: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        known = {name for name in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


def run_key(task: str, config: str, repetition: int) -> str:
    return f"{task}\t{config}\t{repetition}"


@dataclass
class EventTally:
    """Folds ``crab run --output jsonl`` events into a run's counts."""

    session: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float | None = None
    priced: bool = True
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    stop: str | None = None
    error: str | None = None
    answer: str = ""
    _in_reply: bool = False

    def add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "turn_start":
            self.session = self.session or event.get("session_id")
            self._in_reply = False
        elif kind in ("text_delta", "thinking_delta", "tool_call", "usage", "error"):
            if not self._in_reply:  # a reply begins after the turn's start or after tool results
                self.model_calls += 1
                self._in_reply = True
            if kind == "error":
                self.error = str(event.get("message", ""))
        elif kind == "tool_result":
            self._in_reply = False
            self.tool_calls += 1
            self.tool_errors += bool(event.get("is_error"))
        elif kind == "turn_end":
            self.stop = event.get("stop")
            self.answer = str(event.get("text") or "")
            self.error = event.get("error") or self.error
            usage = event.get("usage") or {}
            self.input_tokens += int(usage.get("input_tokens", 0))
            self.output_tokens += int(usage.get("output_tokens", 0))
            self.cache_read_tokens += int(usage.get("cache_read_tokens", 0))
            self.cache_write_tokens += int(usage.get("cache_write_tokens", 0))
            if usage.get("cost") is None:
                self.priced = self.priced and not (usage.get("input_tokens") or usage.get("output_tokens"))
            else:
                self.cost = (self.cost or 0.0) + float(usage["cost"])

    def feed(self, stdout: str) -> None:
        for line in stdout.splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                self.add(event)


def _cut(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def prepare_workspace(task: Task) -> Path:
    """A fresh temporary folder holding a copy of the task's fixture (empty without one)."""
    root = Path(tempfile.mkdtemp(prefix=f"crab-eval-{task.name}-"))
    work = root / "work"
    if task.fixture is not None:
        shutil.copytree(task.fixture, work, symlinks=True)
    else:
        work.mkdir()
    return work


async def execute(
    task: Task,
    config: Configuration,
    repetition: int,
    *,
    timeout: float,
    store: str | None,
    judge_model: str | None,
    keep: bool,
) -> RunRecord:
    """Run ``task`` once under ``config`` and judge it; cancelling ends its processes."""
    record = RunRecord(
        run_key(task.name, config.label, repetition), task.name, config.label, config.fingerprint, repetition
    )
    work = prepare_workspace(task)
    record.workspace = str(work)
    tally = EventTally()
    started = time.monotonic()
    deadline = started + (task.timeout or timeout)
    try:
        for index, prompt in enumerate(task.prompts):
            argv = [sys.executable, "-m", "crab", "run", "--output", "jsonl", "--yolo", *config.run_arguments()]
            if config.scripted:
                argv += ["-m", f"mock/{task.solutions[index]}"]
            if task.max_iterations is not None:
                argv += ["--set", f"crab.max_iterations={task.max_iterations}"]
            if store:
                argv += ["--store", store]
            if tally.session:
                argv += ["--session", tally.session]
            done = await run_bounded([*argv, "--", prompt], work, max(deadline - time.monotonic(), 0.1))
            tally.feed(done.stdout)
            if done.timed_out:
                record.reasons.append(f"the run took over {task.timeout or timeout:g}s")
                break
            if done.code not in (0, 1):  # 2: a usage or config error, nothing to judge
                line = (done.stderr.strip().splitlines() or [f"exit {done.code}"])[-1]
                record.error = line
                record.reasons.append(f"crab run failed: {line}")
                break
        record.wall_seconds = time.monotonic() - started
        if not record.reasons:
            record.reasons = await judge(task, work, tally.answer, judge_model)
        record.passed = not record.reasons
    finally:
        if not keep:
            shutil.rmtree(work.parent, ignore_errors=True)
    record.session = tally.session
    record.input_tokens, record.output_tokens = tally.input_tokens, tally.output_tokens
    record.cache_read_tokens, record.cache_write_tokens = tally.cache_read_tokens, tally.cache_write_tokens
    record.cost = tally.cost if tally.priced else None
    record.model_calls, record.tool_calls, record.tool_errors = tally.model_calls, tally.tool_calls, tally.tool_errors
    record.stop, record.error = tally.stop, record.error or tally.error
    record.answer = _cut(tally.answer)
    return record
