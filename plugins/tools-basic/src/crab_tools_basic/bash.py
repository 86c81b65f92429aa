"""The ``bash`` tool: one shell command in the workspace, bounded in time and in output.

The command runs in its own session and process group (through ``crab.processes``, so crab
can find every process it starts, ``setsid`` ones included), with stdin from /dev/null. Its
output comes through a pipe into a capped, redacted capture (``bash_log``); the call ends when
the shell exits, and output a background child writes after that is dropped. On timeout or
abort the group and every descendant carrying this call's tag get SIGTERM, then SIGKILL.
With ``background: true`` the command starts as a job of the session instead (``jobs``) and the
call answers with its id at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from crab import Tool, ToolContext, ToolError, ToolResult, processes, tool
from crab.secrets import known_secrets
from crab.tools import OutputLimit, Truncation
from crab.tools import describe_truncation as describe
from crab.tools import truncate_output as truncate

from crab_tools_basic import bash_log
from crab_tools_basic.bash_log import Capture
from crab_tools_basic.oserrors import os_errors
from crab_tools_basic.pipe import PipeSink, shell
from crab_tools_basic.settings import Settings
from crab_tools_basic.workspace import settings_of, workspace_of

OUTPUT_LIMIT = OutputLimit(lines=2000, bytes=50_000, keep="tail")
KILL_GRACE = 2.0
CANCEL_GRACE = 0.5
"""Shorter on abort: Ctrl-C must end crab within 2 s."""
DRAIN = 0.2
"""Seconds to wait for the pipe to close after the shell exits (a background child may hold it)."""
TIMEOUT_MARGIN = 30.0
"""Seconds the loop's own timeout allows beyond ``bash_max_timeout``, for the kill and the tail."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a command ended: exit code (negative: killed by that signal) and whether we killed it."""

    returncode: int | None
    timed_out: bool
    log: Path
    total_bytes: int = 0
    dropped_bytes: int = 0


async def _end(pgid: int, tag: str, grace: float) -> None:
    # In a thread: it polls with sleeps, and must finish even if this task is cancelled again.
    await asyncio.to_thread(processes.terminate, pgid, tag, grace)


async def run_command(command: str, cwd: Path, timeout: float, capture: Capture) -> tuple[int | None, bool]:
    """Run ``command`` with ``bash -c`` in ``cwd``, its output (stdout and stderr) into ``capture``.

    Returns (exit code, timed out) when the shell exits or ``timeout`` passes (then the group
    and its tagged descendants are ended). If the calling task is cancelled, they are ended
    before the cancellation goes on.
    """
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    tag = processes.new_tag()
    try:
        process = await processes.start(
            processes.wrap_command([shell(), "-c", command], cwd),
            tag,
            grace=CANCEL_GRACE,
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
    pgid = process.pid
    closed: asyncio.Future[None] = loop.create_future()
    timed_out = False
    try:
        # Inside the try: a cancel that lands here (a loaded machine runs the shell well before
        # this task resumes) must still end the group, not leave it to the transport's kill of
        # the shell alone, which orphans the shell's children.
        await loop.connect_read_pipe(lambda: PipeSink(capture, closed), os.fdopen(read_fd, "rb", buffering=0))
        try:
            await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            timed_out = True
            await _end(pgid, tag, KILL_GRACE)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 5)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(closed), DRAIN)
        capture.freeze()
        return process.returncode, timed_out
    except asyncio.CancelledError:
        await _end(pgid, tag, CANCEL_GRACE)
        raise
    finally:
        # asyncio's child watcher reaps the shell; until then it must not look like an orphan.
        if process.returncode is not None:
            processes.untrack(pgid)


def output_tail(log: Path) -> tuple[str, str | None]:
    """The end of the log within 2,000 lines / 50 KB, and a note when anything was cut."""
    # A background child may still be writing: everything below looks at the first ``size`` bytes.
    size = log.stat().st_size
    lines = 0
    with log.open("rb") as handle:
        left = size
        while left and (chunk := handle.read(min(left, 1 << 20))):
            lines += chunk.count(b"\n")
            left -= len(chunk)
        # A little more than the byte budget, so a whole first line can be dropped.
        start = max(0, size - OUTPUT_LIMIT.bytes - 4096)
        handle.seek(start)
        tail = handle.read(size - start)
    if size and not tail.endswith(b"\n"):
        lines += 1
    if size > len(tail) and b"\n" in tail:
        tail = tail[tail.index(b"\n") + 1 :]
    text, cut = truncate(tail.decode("utf-8", "replace"), OUTPUT_LIMIT)
    if cut is None and len(tail) == size:
        return text, None
    # Report the cut against the whole log, not just the slice read back from its end.
    hit: Literal["lines", "bytes"] = cut.limit if cut is not None else "bytes"
    kept_lines = cut.kept_lines if cut is not None else text.count("\n") + (0 if text.endswith("\n") else 1)
    kept_bytes = cut.kept_bytes if cut is not None else len(text.encode("utf-8"))
    whole = Truncation(kept_lines, lines, kept_bytes, size, hit, "tail")
    return text, describe(whole, OUTPUT_LIMIT, f"full output in {log}")


def describe_outcome(outcome: Outcome, timeout: float) -> ToolResult:
    """The result the model sees: the output's tail, then how the command ended."""
    text, note = output_tail(outcome.log)
    parts = [text.rstrip("\n") or "(no output)"]
    if note:
        parts.append(note)
    else:
        # The whole output is in the result; the log would only fill the disk.
        with contextlib.suppress(OSError):
            outcome.log.unlink()
    if outcome.dropped_bytes > 0:
        parts.append(
            f"[the command wrote {outcome.total_bytes} bytes; the log keeps its first and last MBs, "
            f"{outcome.dropped_bytes} bytes from the middle were dropped]"
        )
    details: dict[str, object] = {"exit_code": outcome.returncode, "timed_out": outcome.timed_out}
    if note:
        details["log"] = str(outcome.log)
    if outcome.timed_out:
        parts.append(f"[timed out after {timeout:g} s; the command and its child processes were terminated]")
        return ToolResult("\n".join(parts), is_error=True, details=details)
    code = outcome.returncode
    if code is not None and code < 0:
        try:
            name = f" ({signal.Signals(-code).name})"
        except ValueError:
            name = ""
        parts.append(f"[killed by signal {-code}{name}]")
    else:
        parts.append(f"[exit code {code}]")
    return ToolResult("\n".join(parts), is_error=code != 0, details=details)


def pick_timeout(requested: float | None, settings: Settings) -> tuple[float, str]:
    """The timeout to use, and a note when the request was above the configured maximum."""
    if requested is None:
        return settings.bash_default_timeout, ""
    if requested <= 0:
        raise ToolError("timeout must be a positive number of seconds")
    if requested > settings.bash_max_timeout:
        most = settings.bash_max_timeout
        return most, f"[timeout lowered from {requested:g} s to the configured maximum, {most:g} s]"
    return float(requested), ""


async def bash(
    command: Annotated[str, "the command line"],
    ctx: ToolContext,
    timeout: Annotated[float | None, "seconds before it is killed"] = None,
    background: Annotated[bool, "run it as a background job"] = False,
) -> ToolResult:
    settings = settings_of(ctx)
    limit, note = pick_timeout(timeout, settings)
    if not command.strip():
        raise ToolError("command is empty")
    workspace = workspace_of(ctx, settings).root
    if background:
        from crab_tools_basic.job_tools import start_background

        with os_errors("bash could not start the background job"):
            started = await start_background(command, workspace, limit if timeout is not None else None, ctx)
        if note:
            return ToolResult(f"{note}\n{started.content}", started.is_error, started.details)
        return started
    capture = Capture()
    with os_errors("bash could not start"):
        log = bash_log.new_log_path(settings.log_dir, ctx.session_id)
        await asyncio.to_thread(bash_log.sweep, settings.log_dir, settings.bash_log_retention_days, ctx.session_id)
        try:
            returncode, timed_out = await run_command(command, workspace, limit, capture)
        except BaseException:
            log.unlink(missing_ok=True)  # aborted: nobody will be told about this log
            raise
    with os_errors("bash could not write or read the command's log"):
        # Redacting and counting lines of a few MB takes a while: keep it off the event loop.
        secrets = known_secrets(ctx.config)
        data = await asyncio.to_thread(bash_log.render, capture, secrets)
        await asyncio.to_thread(bash_log.write_log, log, data)
        result = await asyncio.to_thread(
            describe_outcome, Outcome(returncode, timed_out, log, capture.total, capture.dropped), limit
        )
    if note:
        return ToolResult(f"{note}\n{result.content}", result.is_error, result.details)
    return result


def make_bash_tool(settings: Settings) -> Tool:
    """The bash tool for this configuration: its limits appear in its description."""
    description = (
        "Run a command with bash -c in a fresh shell at the workspace root; returns its exit code "
        "and output (stdout and stderr).\n\n"
        "Neither `cd` nor variables carry over to the next call (`cd web && npm test` in one). "
        "stdin is /dev/null, so interactive commands fail instead of waiting: pass non-interactive "
        "flags (`-y`, `--no-pager`, `CI=1`); start no watch mode and no `sleep` loop. "
        f"Timeout: {settings.bash_default_timeout:g} s unless you pass `timeout` (at most "
        f"{settings.bash_max_timeout:g} s); then the command and all its child processes are killed. "
        "Output beyond the last 2,000 lines or 50 KB is cut and saved to a log file whose path is "
        "given (read it with offset; of a huge output it keeps the first 1 MB and the last 4 MB), so "
        "do not pipe output through head or tail. A non-zero exit is an error. For a command that "
        "keeps running (a dev server, a watcher, a long build) pass `background: true`: it returns a "
        "job id at once (no timeout unless you pass one); read its new output with bash_output, end "
        "it with bash_kill. Prefer read, grep, glob and ls for looking at files, and edit or write "
        "for changing them."
    )
    return tool(
        name="bash",
        description=description,
        permission="exec",
        timeout=settings.bash_max_timeout + TIMEOUT_MARGIN,
        output_limit=None,
    )(bash)
