"""grep's Python engine in a worker process: what only Python's ``re`` can do, killable.

A backtracking pattern such as ``(x+x+)+y`` can run for hours inside ``re``, holding the GIL
the whole time, so no thread of crab could stop it. ``search_in_worker`` runs it in
``python -m crab_tools_basic.grep_worker`` (a tracked process group, ``crab.processes``) and
kills it when the call is cancelled or times out. The request and the answer are JSON (file
names keep undecodable bytes as ``surrogateescape`` code points, which JSON escapes carry).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Sequence
from typing import Any

from crab import ToolError, processes

from crab_tools_basic.grep_engine import FileHits, Target, python_search


def request(targets: Sequence[Target], pattern: str, flags: int, context: int, allow_hardlinks: bool) -> bytes:
    payload = {
        "pattern": pattern,
        "flags": flags,
        "context": context,
        "allow_hardlinks": allow_hardlinks,
        "targets": [[t.path, t.display] for t in targets],
    }
    return json.dumps(payload).encode("ascii")


def answer(hits: Sequence[FileHits]) -> bytes:
    rows = [[h.display, h.matches, [[n, str(line)] for n, line in h.lines.items()]] for h in hits]
    return json.dumps(rows).encode("ascii")


def parse_answer(data: bytes) -> list[FileHits]:
    rows: list[Any] = json.loads(data)
    return [FileHits(display, list(matches), {int(n): text for n, text in lines}) for display, matches, lines in rows]


def search_in_worker(
    targets: Sequence[Target],
    pattern: str,
    flags: int,
    context: int,
    stop: threading.Event | None = None,
    allow_hardlinks: bool = True,
) -> list[FileHits]:
    """Search ``targets`` with ``re`` in a worker process that ``stop`` ends at once."""
    if not targets:
        return []
    args = [sys.executable, "-m", "crab_tools_basic.grep_worker"]
    try:
        done = processes.run_bounded(args, stop, input=request(targets, pattern, flags, context, allow_hardlinks))
    except processes.Stopped:
        raise ToolError("cancelled") from None
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ToolError(f"grep's Python engine failed: {reason[-1] if reason else f'exit {done.returncode}'}")
    return parse_answer(done.stdout)


def main() -> int:
    """The worker: a request on stdin, the hits on stdout."""
    payload = json.loads(sys.stdin.buffer.read())
    regex = re.compile(payload["pattern"], payload["flags"])
    targets = [Target(path, display) for path, display in payload["targets"]]
    hits = python_search(targets, regex, payload["context"], None, payload["allow_hardlinks"])
    sys.stdout.buffer.write(answer(hits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
