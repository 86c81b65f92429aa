"""The ``bash`` tool: one shell command in the workspace, bounded in time and in output.

The command runs in its own process group with stdin from /dev/null and its output going to a
log file rather than a pipe, so a background child that keeps stdout open cannot hold the tool
open: the call ends when the shell exits. On timeout or abort the whole group gets SIGTERM,
then SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from crab import OutputLimit, Tool, ToolContext, ToolError, ToolResult, Truncation, tool
from crab import describe_truncation as describe
from crab import truncate_output as truncate

from crab_tools_basic.oserrors import os_errors
from crab_tools_basic.settings import Settings
from crab_tools_basic.workspace import settings_of, workspace_of

OUTPUT_LIMIT = OutputLimit(lines=2000, bytes=50_000, keep="tail")
KILL_GRACE = 2.0
TIMEOUT_MARGIN = 30.0
"""Seconds the loop's own timeout allows beyond ``bash_max_timeout``, for the kill and the tail."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a command ended: exit code (negative: killed by that signal) and whether we killed it."""

    returncode: int | None
    timed_out: bool
    log: Path


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def kill_group(pgid: int, grace: float = KILL_GRACE) -> None:
    """SIGTERM the group, give it ``grace`` seconds to go, then SIGKILL whatever is left.

    The SIGKILL is sent from a ``finally`` so a second cancellation cannot skip it.
    """
    _signal_group(pgid, signal.SIGTERM)
    try:
        for _ in range(max(1, round(grace / 0.05))):
            if not _group_alive(pgid):
                break
            await asyncio.sleep(0.05)
    finally:
        _signal_group(pgid, signal.SIGKILL)


def new_log_path(folder: Path, session_id: str) -> Path:
    """A fresh, private log file name for one command of one session."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", session_id)[:80] or "session"
    where = folder / safe
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        candidate = where / f"bash-{stamp}-{os.getpid()}-{n}.log"
        try:
            candidate.touch(mode=0o600, exist_ok=False)
        except FileExistsError:
            continue
        return candidate
    raise ToolError(f"could not create a log file in {where}")


async def run_command(command: str, cwd: Path, timeout: float, log: Path) -> Outcome:
    """Run ``command`` with ``bash -c`` in ``cwd``; all output (stdout and stderr) goes to ``log``.

    Returns when the shell exits or ``timeout`` passes (then the group is killed). If the
    calling task is cancelled, the group is killed before the cancellation goes on.
    """
    with log.open("wb") as sink:
        process = await asyncio.create_subprocess_exec(
            _shell(),
            "-c",
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    # With start_new_session the shell leads its own group: its pid is the group id.
    pgid = process.pid
    try:
        returncode = await asyncio.wait_for(process.wait(), timeout)
        return Outcome(returncode, False, log)
    except TimeoutError:
        await kill_group(pgid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), 5)
        return Outcome(process.returncode, True, log)
    except asyncio.CancelledError:
        await kill_group(pgid)
        raise


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
    command: Annotated[str, "the shell command (bash -c)"],
    ctx: ToolContext,
    timeout: Annotated[float | None, "seconds before the command is killed"] = None,
) -> ToolResult:
    settings = settings_of(ctx)
    limit, note = pick_timeout(timeout, settings)
    if not command.strip():
        raise ToolError("command is empty")
    workspace = workspace_of(ctx, settings).root
    with os_errors("bash could not start"):
        log = new_log_path(settings.log_dir, ctx.session_id)
        outcome = await run_command(command, workspace, limit, log)
    with os_errors("bash could not read the command's output"):
        # Counting the lines of a huge log takes a while: keep it off the event loop.
        result = await asyncio.to_thread(describe_outcome, outcome, limit)
    if note:
        return ToolResult(f"{note}\n{result.content}", result.is_error, result.details)
    return result


def make_bash_tool(settings: Settings) -> Tool:
    """The bash tool for this configuration: its limits appear in its description."""
    description = (
        "Run a shell command (bash -c) in the workspace and return its exit code and output "
        "(stdout and stderr together).\n\n"
        f"Timeout: {settings.bash_default_timeout:g} s unless you pass `timeout` (at most "
        f"{settings.bash_max_timeout:g} s); on timeout the command and all its child processes are "
        "killed. stdin is /dev/null, so interactive commands fail instead of waiting. Output "
        "beyond the last 2,000 lines or 50 KB is cut; the full output is then saved to a file "
        "whose path is given (read it with offset). A non-zero exit is reported as an error. "
        "The call ends when the shell exits: a command left running in the background keeps "
        "running. Prefer read, grep, glob and ls for looking at files."
    )
    return tool(
        name="bash",
        description=description,
        permission="exec",
        timeout=settings.bash_max_timeout + TIMEOUT_MARGIN,
        output_limit=None,
    )(bash)
