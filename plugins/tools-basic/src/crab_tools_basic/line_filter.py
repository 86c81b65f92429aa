"""bash_output's ``filter`` in a worker process: the model's regular expression, killable.

A pattern such as ``(x+x+)+y`` can backtrack for hours inside ``re`` holding the GIL, so crab
never runs a model's pattern itself (as grep's ``grep_worker``): ``matching_lines`` runs
``python -m crab_tools_basic.line_filter`` through ``crab.processes.run_bounded`` and ends it
when the deadline passes or the call is cancelled. Request and answer are JSON.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading

DEADLINE = 10.0
"""Seconds a filter may take over one read's text."""


def check_pattern(pattern: str) -> None:
    """Raise ``ToolError`` with one line when ``pattern`` is no regular expression."""
    from crab import ToolError

    try:
        re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"filter is not a valid regular expression: {exc}") from None


async def matching_lines(text: str, pattern: str, deadline: float = DEADLINE) -> str:
    """The lines of ``text`` that ``pattern`` matches (``re.search``), newlines kept."""
    from crab import ToolError, processes

    if not text:
        return ""
    stop = threading.Event()
    payload = json.dumps({"pattern": pattern, "text": text}).encode("ascii")
    args = [sys.executable, "-m", "crab_tools_basic.line_filter"]
    try:
        done = await asyncio.wait_for(asyncio.to_thread(processes.run_bounded, args, stop, input=payload), deadline)
    except TimeoutError:
        raise ToolError(f"filter took longer than {deadline:g} s (a pattern that backtracks?): simplify it") from None
    except processes.Stopped:
        raise ToolError("cancelled") from None
    finally:
        stop.set()  # ends the worker if this call was cancelled or ran out of time
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ToolError(f"filter failed: {said[-1] if said else f'exit code {done.returncode}'}")
    kept: str = json.loads(done.stdout)
    return kept


def main() -> int:
    """The worker: ``{"pattern", "text"}`` on stdin, the matching lines (as a JSON string) on stdout."""
    payload = json.loads(sys.stdin.buffer.read())
    regex = re.compile(payload["pattern"])
    lines = payload["text"].splitlines(keepends=True)
    sys.stdout.write(json.dumps("".join(line for line in lines if regex.search(line.rstrip("\r\n")))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
