"""Background shells: each session's table of jobs, their processes, and their end.

``bash`` with ``background: true`` starts its command here and returns at once. A job starts like
a foreground command (``crab.processes``: its own session and process group, tagged and tracked,
the command wrappers such as crab-sandbox applied); its stdout and stderr go into an
``OutputRing``. When the shell exits, whatever it left running in its group or carrying its tag
is ended too, so a job that is over runs nothing. Every job ends with its session
(``end_session`` from ``crab_session_end``: ``/new``, ``/clear`` and ``/resume`` leave it, a
subagent's ends with its answer), with its agent (``end_agent`` from ``crab_shutdown``) and,
whatever else happens, with crab
(``processes.terminate_all`` on every way out of the ``crab`` command; when crab is killed
outright, by the watcher ``crab.processes`` keeps).

A session holds at most ``bash_max_jobs`` running jobs, and keeps the records of at most twice
that many (the oldest finished ones go first, those whose end was already reported before
those whose end was not).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crab import ToolContext, ToolError, processes

from crab_tools_basic.pipe import PipeSink, shell
from crab_tools_basic.ring import OutputRing

STATE_KEY = "tools-basic.jobs"
"""``ToolContext.state`` key of a session's ``JobTable``."""
KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL for ``bash_kill`` (a server may want to clean up)."""
END_GRACE = 0.5
"""The same at a session's or crab's end: Ctrl-C must end crab within 2 s."""
DRAIN = 0.2
"""Seconds to wait for the pipe to close once the job's processes are gone."""
REAP = 5.0
"""Seconds to wait for the exit status of a process that was sent SIGKILL."""


@dataclass(eq=False)
class Job:
    """One background shell: its command, process group and tag, output, and how it ended.

    ``cursor`` and ``pending`` are where the model's reading stands (``job_output``): the offset
    in the output read so far, and text read but held back (an unfinished line being filtered,
    or what may be the start of a secret).
    """

    id: str
    command: str
    pgid: int
    tag: str
    ring: OutputRing
    started: float = field(default_factory=time.monotonic)
    returncode: int | None = None
    ended: float | None = None
    ended_by: str | None = None
    """Who ended it, when not the command itself: "bash_kill", "timeout" or "session end"."""
    reported: bool = False
    """Whether a ``bash_output`` has told the model that it ended."""
    cursor: int = 0
    pending: str = ""
    done: asyncio.Event = field(default_factory=asyncio.Event)
    watcher: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return not self.done.is_set()

    def runtime(self, now: float | None = None) -> float:
        end = self.ended if self.ended is not None else (time.monotonic() if now is None else now)
        return max(0.0, end - self.started)

    @property
    def state(self) -> str:
        """One word: running, exited, failed, killed or timed-out."""
        if self.running:
            return "running"
        if self.ended_by == "timeout":
            return "timed-out"
        if self.ended_by is not None or (self.returncode is not None and self.returncode < 0):
            return "killed"
        return "exited" if self.returncode == 0 else "failed"

    def describe_end(self) -> str:
        """How it ended, in words (for a job that is over)."""
        code = self.returncode
        took = f"after {seconds(self.runtime())}"
        if self.ended_by == "bash_kill":
            return f"ended by bash_kill {took}"
        if self.ended_by == "timeout":
            return f"timed out and was ended {took}"
        if self.ended_by is not None:
            return f"ended at the {self.ended_by} {took}"
        if code is not None and code < 0:
            try:
                name = f" ({signal.Signals(-code).name})"
            except ValueError:
                name = ""
            return f"killed by signal {-code}{name} {took}"
        return f"exited with code {code} {took}"


def seconds(value: float) -> str:
    """A duration as people read it: 0.4 s, 12 s, 3 min 5 s, 2 h 4 min."""
    if value < 10:
        return f"{value:.1f} s"
    whole = int(value)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


class JobTable:
    """The background jobs of one session (see the module docstring)."""

    def __init__(self, max_jobs: int, buffer_bytes: int) -> None:
        self.max_jobs = max_jobs
        self.buffer_bytes = buffer_bytes
        self.jobs: dict[str, Job] = {}
        self._next = 1

    def running(self) -> list[Job]:
        return [job for job in self.jobs.values() if job.running]

    def get(self, job_id: str) -> Job:
        """The job of that id, or a ``ToolError`` naming the ids there are."""
        job = self.jobs.get(job_id.strip())
        if job is None:
            known = ", ".join(self.jobs) or "none: start one with bash and background: true"
            raise ToolError(f"no background job {job_id!r} in this session (jobs: {known})")
        return job

    async def start(self, command: str, cwd: Path, timeout: float | None) -> Job:
        """Start ``command`` with ``bash -c`` in ``cwd``; ``timeout`` (seconds) ends it, if given."""
        if self.max_jobs <= 0:
            raise ToolError("background jobs are off here ([plugins.tools-basic] bash_max_jobs = 0)")
        if len(self.running()) >= self.max_jobs:
            raise ToolError(
                f"{self.max_jobs} background jobs are already running (bash_max_jobs): end one with "
                "bash_kill, or wait for one to finish"
            )
        loop = asyncio.get_running_loop()
        read_fd, write_fd = os.pipe()
        tag = processes.new_tag()
        try:
            process = await processes.start(
                processes.wrap_command([shell(), "-c", command], cwd),
                tag,
                grace=END_GRACE,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=subprocess.STDOUT,
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        # In a session of its own the shell leads its own group: its pid is the group id.
        job = Job(f"job-{self._next}", command, process.pid, tag, OutputRing(self.buffer_bytes))
        self._next += 1
        closed: asyncio.Future[None] = loop.create_future()
        try:
            transport, _ = await loop.connect_read_pipe(
                lambda: PipeSink(job.ring, closed), os.fdopen(read_fd, "rb", buffering=0)
            )
        except BaseException:
            await asyncio.to_thread(processes.terminate, job.pgid, tag, END_GRACE)
            raise
        self._prune()
        self.jobs[job.id] = job
        job.watcher = asyncio.create_task(self._watch(job, process, transport, closed, timeout), name=job.id)
        return job

    async def _watch(
        self,
        job: Job,
        process: asyncio.subprocess.Process,
        transport: asyncio.BaseTransport,
        closed: asyncio.Future[None],
        timeout: float | None,
    ) -> None:
        try:
            try:
                await asyncio.wait_for(process.wait(), timeout)
            except TimeoutError:
                job.ended_by = "timeout"
                await _end(job, KILL_GRACE)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), REAP)
            # The shell is gone; what it left running in its group or with its tag goes too.
            await _end(job, 0.0 if job.ended_by is not None else END_GRACE)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(closed), DRAIN)
        except asyncio.CancelledError:
            # The event loop is closing without crab_shutdown (a library user): end it here.
            processes.terminate(job.pgid, job.tag, END_GRACE)
            raise
        finally:
            transport.close()
            job.returncode = process.returncode
            job.ended = time.monotonic()
            # asyncio's child watcher reaps the shell; until then it must not look like an orphan.
            if process.returncode is not None:
                processes.untrack(job.pgid)
            job.done.set()

    async def kill(self, job: Job, why: str = "bash_kill", grace: float = KILL_GRACE) -> None:
        """End ``job`` (SIGTERM, SIGKILL after ``grace``) and wait until it is over."""
        if not job.running:
            return
        job.ended_by = why
        await _end(job, grace)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(job.done.wait(), REAP)

    async def close(self, why: str = "session end") -> None:
        """End every running job at once."""
        await asyncio.gather(*(self.kill(job, why, END_GRACE) for job in self.running()))

    def _prune(self) -> None:
        """Drop the oldest finished records while the table holds too many."""
        keep = 2 * max(self.max_jobs, 1) - 1  # room for the one being added
        for reported in (True, False):
            for job in [j for j in self.jobs.values() if not j.running and j.reported == reported]:
                if len(self.jobs) <= keep:
                    return
                del self.jobs[job.id]


async def _end(job: Job, grace: float) -> None:
    # In a thread: it polls with sleeps, and must finish even if this task is cancelled again.
    await asyncio.to_thread(processes.terminate, job.pgid, job.tag, grace)


_tables: dict[int, dict[str, JobTable]] = {}
"""The tables of each live agent (by the id of its config) by session id, for ``/jobs`` and
for ending them at ``crab_shutdown``."""


def table_for(ctx: ToolContext, max_jobs: int, buffer_bytes: int) -> JobTable:
    """This session's table, made on first use."""
    table = ctx.state.get(STATE_KEY)
    if not isinstance(table, JobTable):
        table = JobTable(max_jobs, buffer_bytes)
        ctx.state[STATE_KEY] = table
    if ctx.config is not None:
        # Again on each use: a session that was ended and is used again is listed once more.
        _tables.setdefault(id(ctx.config), {})[ctx.session_id] = table
    return table


def session_table(config: Any, session_id: str) -> JobTable | None:
    """The table of ``session_id`` in the agent of ``config``, if it started a job."""
    return _tables.get(id(config), {}).get(session_id)


async def end_session(config: Any, session_id: str) -> None:
    """End every job of ``session_id`` in the agent of ``config`` (its ``crab_session_end``)."""
    table = _tables.get(id(config), {}).pop(session_id, None)
    if table is not None:
        await table.close()


async def end_agent(config: Any) -> None:
    """End every job of the agent of ``config`` (its ``crab_shutdown``)."""
    tables = _tables.pop(id(config), {})
    await asyncio.gather(*(table.close() for table in tables.values()))
