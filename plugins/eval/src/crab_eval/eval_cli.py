"""``crab eval SUITE``: plan every run, run them within the bound, record each as it finishes, report.

Each finished run is one line of ``OUT/runs.jsonl`` as soon as it is judged, so Ctrl-C (or
SIGTERM) ends the running ones, keeps what finished, prints the report of those and exits 130;
``--resume`` keeps the finished runs of the same task, configuration and repetition and runs the
rest. Without ``--resume`` an earlier record in OUT is started afresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crab

from crab_eval.configs import Configuration, configurations
from crab_eval.report import build_report
from crab_eval.report_html import html_report
from crab_eval.report_text import visible, write_table
from crab_eval.runner import RunRecord, execute, run_key
from crab_eval.settings import NAME, TABLE
from crab_eval.suite import Task, read_suite, suite_folder

RUNS_FILE = "runs.jsonl"


@dataclass
class EvalOptions:
    suite: str
    models: list[str] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)
    prompt_file: str | None = None
    repeat: int = 1
    jobs: int | None = None
    tasks: list[str] = field(default_factory=list)
    scripted: bool = False
    resume: bool = False
    out: str | None = None
    json_path: str | None = None
    html_path: str | None = None
    judge_model: str | None = None
    output: str = "text"
    store: str | None = None
    keep: bool = False


@dataclass(frozen=True)
class Planned:
    task: Task
    config: Configuration
    repetition: int

    @property
    def key(self) -> str:
        return run_key(self.task.name, self.config.label, self.repetition)


def read_finished(path: Path, wanted: dict[str, Planned]) -> dict[str, RunRecord]:
    """Finished runs recorded in ``path`` that match a planned run (and its configuration)."""
    finished: dict[str, RunRecord] = {}
    if not path.is_file():
        return finished
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = RunRecord.from_dict(json.loads(line))
        except (json.JSONDecodeError, TypeError):
            continue  # a line cut by a crash mid-write
        plan = wanted.get(record.key)
        if plan is not None and plan.config.fingerprint == record.fingerprint:
            finished[record.key] = record
    return finished


class Recorder:
    """Appends each finished run to ``runs.jsonl`` (flushed, so a kill keeps it) and reports progress.

    Every record is redacted first: a check command's output or a judge's verdict may quote a key.
    """

    def __init__(self, path: Path, output: str, total: int, done: int, redactor: crab.secrets.Redactor) -> None:
        self.path, self.output, self.total, self.done = path, output, total, done
        self.redactor = redactor

    def add(self, record: RunRecord) -> None:
        record = RunRecord.from_dict(self.redactor.payload(record.to_dict()))
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
        self.done += 1
        if self.output == "jsonl":
            sys.stdout.write(json.dumps({"v": 1, "type": "run", **record.to_dict()}, ensure_ascii=False) + "\n")
        else:
            verdict = "pass" if record.passed else "FAIL"
            line = f"[{self.done}/{self.total}] {verdict} {record.task} [{record.config}] #{record.repetition + 1}"
            sys.stderr.write(visible(line) + "\n")
        sys.stdout.flush()


async def run_all(plans: list[Planned], recorder: Recorder, options: EvalOptions, timeout: float, jobs: int) -> bool:
    """Run ``plans`` at most ``jobs`` at a time; False when a signal stopped them."""
    gate = asyncio.Semaphore(jobs)
    stopped = asyncio.Event()

    async def one(plan: Planned) -> None:
        async with gate:
            if stopped.is_set():
                return
            record = await execute(
                plan.task,
                plan.config,
                plan.repetition,
                timeout=timeout,
                store=options.store,
                judge_model=options.judge_model,
                keep=options.keep,
            )
            recorder.add(record)

    tasks = [asyncio.ensure_future(one(plan)) for plan in plans]
    loop = asyncio.get_running_loop()

    def stop() -> None:
        stopped.set()
        for task in tasks:
            task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)
    try:
        results = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result
    return not stopped.is_set()


def _write(path: str, text: str) -> None:
    crab.tools.write_atomic(Path(path), text.encode("utf-8"))
    sys.stderr.write(f"wrote {path}\n")


def run(config: crab.Config, options: EvalOptions) -> int:
    if options.output not in ("text", "jsonl"):
        raise crab.UsageError(f"--output {options.output!r}: use text or jsonl")
    config.resolve([TABLE])
    for line in config.notices():
        sys.stderr.write(f"warning: {line}\n")
    settings = config.plugin_settings(NAME)
    jobs = options.jobs or int(settings.get("jobs") or 2)
    timeout = float(settings.get("timeout") or 600.0)
    options.judge_model = options.judge_model or settings.get("judge_model")
    tasks = read_suite(options.suite, options.tasks)
    configs = configurations(options.models, options.sets, options.prompt_file, options.scripted)
    if options.scripted:
        unscripted = [t.name for t in tasks if not t.solutions]
        if unscripted:
            raise crab.UsageError(f"--scripted: task {unscripted[0]} has no [scripted] solution")
    if not options.judge_model:
        judged_only = [t.name for t in tasks if not t.check.mechanical]
        if judged_only:
            raise crab.UsageError(f"task {judged_only[0]} is judged by a model only: pass --judge-model MODEL")
    folder = suite_folder(options.suite)
    out = Path(options.out or Path(".crab-eval") / folder.name).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    runs_file = out / RUNS_FILE
    plans = [Planned(t, c, n) for t in tasks for c in configs for n in range(options.repeat)]
    wanted = {p.key: p for p in plans}
    finished = read_finished(runs_file, wanted) if options.resume else {}
    if not options.resume:
        runs_file.write_text("", encoding="utf-8")
    elif finished:
        sys.stderr.write(f"resuming: {len(finished)} of {len(plans)} runs already finished\n")
    pending = [p for p in plans if p.key not in finished]
    recorder = Recorder(
        runs_file, options.output, len(plans), len(finished), crab.secrets.Redactor(crab.secrets.known_secrets(config))
    )
    completed = asyncio.run(run_all(pending, recorder, options, timeout, jobs))
    records = list(read_finished(runs_file, wanted).values())
    order = {p.key: i for i, p in enumerate(plans)}
    records.sort(key=lambda r: order[r.key])
    report = build_report(folder.name, [t.name for t in tasks], [c.label for c in configs], records, len(plans))
    report["out"] = str(out)
    _emit(report, options)
    if not completed:
        sys.stderr.write("crab: interrupted; the finished runs are kept, `--resume` runs the rest\n")
        return 130
    return 0 if all(r.passed for r in records) else 1


def _emit(report: dict[str, Any], options: EvalOptions) -> None:
    if options.output == "jsonl":
        sys.stdout.write(json.dumps({"v": 1, "type": "report", **report}, ensure_ascii=False) + "\n")
    else:
        write_table(report, sys.stdout)
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.flush()
    if options.json_path:
        _write(options.json_path, json.dumps(report, ensure_ascii=False, indent=1) + "\n")
    if options.html_path:
        _write(options.html_path, html_report(report))
