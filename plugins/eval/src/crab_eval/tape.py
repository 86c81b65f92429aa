"""A recorded session read back: its turns, each a prompt, the model's replies and the tool results.

A session comes from the user's configured store through the real ``crab sessions export`` (the
store contract's interchange format, whatever store holds it), or from a file that command wrote.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import crab

EXPORT_TIMEOUT = 120.0


@dataclass
class RecordedTurn:
    """One user input and what followed it: assistant messages in order, and each call's result."""

    prompt: str
    replies: list[crab.messages.AssistantMessage] = field(default_factory=list)
    results: dict[str, crab.messages.ToolResultMessage] = field(default_factory=dict)


@dataclass
class RecordedSession:
    info: crab.storage.SessionInfo
    turns: list[RecordedTurn]
    from_file: bool = False
    """Read from a file, not from the user's store: whoever wrote it chose its permission answers."""

    @property
    def calls(self) -> list[tuple[int, crab.messages.ToolCall]]:
        """Every tool call in order, with the index of its turn."""
        return [(n, call) for n, turn in enumerate(self.turns) for reply in turn.replies for call in reply.tool_calls]


def parse_export(text: str, origin: str) -> RecordedSession:
    """A session from interchange JSON lines (a header line, then one entry per line)."""
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        header = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or crab.storage.SESSION_HEADER_KEY not in header:
        raise crab.UsageError(f"{origin} is not an exported session: write one with `crab sessions export ID -o FILE`")
    info = crab.storage.session_from_header(header)
    entries: list[crab.storage.Entry] = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            entry = crab.storage.entry_from_dict(json.loads(line), info.id)
        except (json.JSONDecodeError, ValueError, TypeError, KeyError) as exc:
            raise crab.UsageError(f"{origin}: line {number} is not a session entry ({exc})") from None
        if entry is not None:
            entries.append(entry)
    return RecordedSession(info, turns_of(entries))


def turns_of(entries: list[crab.storage.Entry]) -> list[RecordedTurn]:
    """Group messages into turns: a user message opens one; assistant messages and results follow."""
    turns: list[RecordedTurn] = []
    for entry in entries:
        if entry.type not in ("message", "tool_result"):
            continue
        message = crab.messages.message_from_dict(dict(entry.payload))
        if isinstance(message, crab.messages.UserMessage):
            turns.append(RecordedTurn(message.content))
        elif not turns:
            continue  # a fork's tail without its opening prompt: nothing to replay it from
        elif isinstance(message, crab.messages.AssistantMessage):
            turns[-1].replies.append(message)
        elif isinstance(message, crab.messages.ToolResultMessage):
            turns[-1].results[message.call_id] = message
    return turns


def read_session(source: str, *, store: str | None = None, plugins: str | None = None) -> RecordedSession:
    """A session by id (through ``crab sessions export``) or from an exported ``.jsonl`` file."""
    path = Path(source).expanduser()
    if path.suffix == ".jsonl" or path.is_file():
        try:
            session = parse_export(path.read_text(encoding="utf-8"), str(path))
        except OSError as exc:
            raise crab.UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
        session.from_file = True
        return session
    command = [sys.executable, "-m", "crab", "sessions", "export", source]
    if store:
        command += ["--store", store]
    if plugins is not None:
        command += ["--plugins", plugins]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=EXPORT_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise crab.UsageError(
            f"reading session {source} took over {EXPORT_TIMEOUT:.0f}s: is the store reachable?"
        ) from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1].removeprefix("crab: ")
        raise crab.UsageError(f"cannot read session {source}: {reason}")
    return parse_export(done.stdout, f"session {source}")
