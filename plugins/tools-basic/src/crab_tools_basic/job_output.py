"""What ``bash_output`` shows of a job: the output since the last read, redacted, filtered, bounded.

Reading goes on from where the last read stopped (``Job.cursor``). Every secret crab knows is
masked, also one cut in two by a read: while the job runs, a tail that may be the start of a
secret is held back (``Job.pending``) until the next read completes or clears it, and where the
ring dropped output, a secret's end at the start of what is left is masked. A ``filter`` keeps
only matching lines (the others are gone for good, as with Claude Code's BashOutput); while the
job runs, an unfinished last line waits for its end. The pattern is the model's: it runs in a
worker process that is ended at the call's timeout (``line_filter``), never inside crab.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crab.secrets import REDACTED, Redactor
from crab.tools import OutputLimit, truncate_output

from crab_tools_basic.jobs import Job

OUTPUT_LIMIT = OutputLimit(lines=2000, bytes=50_000, keep="tail")
MIN_PARTIAL = 4
"""Shortest end of a secret masked where the ring's cut falls inside it."""


@dataclass(frozen=True, slots=True)
class NewOutput:
    """One read: the text to show, what the ring dropped before it, and what the limit cut."""

    text: str
    dropped: int = 0
    cut_note: str | None = None


def incomplete_utf8(data: bytes) -> int:
    """How many bytes at the end of ``data`` begin a UTF-8 character that is not complete yet."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # not a continuation byte: the start of the last character
            need = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4 if byte & 0xF8 == 0xF0 else 1
            return back if need > back else 0
    return 0


def held_from(text: str, secrets: Sequence[str]) -> int:
    """Start of the longest tail of ``text`` that is a proper prefix of a secret (else its length)."""
    longest = max((len(s) for s in secrets), default=0)
    for start in range(max(0, len(text) - longest + 1), len(text)):
        tail = text[start:]
        if any(len(s) > len(tail) and s.startswith(tail) for s in secrets):
            return start
    return len(text)


def mask_until(text: str, hold: int, redactor: Redactor) -> tuple[str, int]:
    """``text[:hold]`` masked, and where the shown part really ends: a whole secret that reaches
    past ``hold`` is masked now, so the held tail never starts inside one."""
    shown: list[str] = []
    done = 0
    for match in redactor.matches(text):
        if match.start() >= hold:
            break
        hold = max(hold, match.end())
        shown += [text[done : match.start()], REDACTED]
        done = match.end()
    shown.append(text[done:hold])
    return "".join(shown), hold


def mask_cut_start(text: str, secrets: Sequence[str]) -> str:
    """Mask the end of a secret at the start of ``text`` (the ring dropped its beginning)."""
    for secret in secrets:
        for size in range(len(secret) - 1, MIN_PARTIAL - 1, -1):
            if text.startswith(secret[-size:]):
                return REDACTED + text[size:]
    return text


def take(job: Job, redactor: Redactor, *, lines_only: bool, hold_limit: int) -> tuple[str, int]:
    """The job's new output, masked, and how many bytes the ring dropped before it; moves the cursor.

    While the job runs, a possible start of a secret is held back and, with ``lines_only``, so is
    an unfinished last line (up to ``hold_limit`` characters: a line longer than that is shown).
    """
    chunk = job.ring.read(job.cursor)
    data = chunk.data
    final = not job.running
    if not final:
        data = data[: len(data) - incomplete_utf8(data)]
    job.cursor = chunk.start + len(data)
    fresh = data.decode("utf-8", "replace")
    parts: list[str] = []
    if chunk.dropped and job.pending:
        parts.append(redactor.text(job.pending))  # what came before the gap ends there
        job.pending = ""
    if chunk.dropped:
        fresh = mask_cut_start(fresh, redactor.secrets)
    text = job.pending + fresh
    if final:
        job.pending = ""
        parts.append(redactor.text(text))
        return "".join(parts), chunk.dropped
    hold = held_from(text, redactor.secrets)
    if lines_only:
        line_end = text.rfind("\n") + 1
        if len(text) - line_end <= hold_limit:
            hold = min(hold, line_end)
    shown, hold = mask_until(text, hold, redactor)
    job.pending = text[hold:]
    parts.append(shown)
    return "".join(parts), chunk.dropped


def bounded(text: str) -> tuple[str, str | None]:
    """``text`` within 2,000 lines / 50 KB (its end kept), and a note when anything was cut."""
    kept, cut = truncate_output(text, OUTPUT_LIMIT)
    if cut is None:
        return kept, None
    return kept, (
        f"[{cut.total_lines - cut.kept_lines} earlier lines ({cut.total_bytes - cut.kept_bytes} bytes) of the new "
        "output not shown: only its last 2,000 lines / 50 KB; use filter to pick lines out]"
    )
