"""Sessions in ``crab chat``: the recap of a resumed one, the ``-r`` picker (the sessions ``/resume``
lists), what a session switch shows, ``/clear``, and the exit line."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from crab._cli.options import RunOptions
from crab._contracts.errors import UsageError
from crab._contracts.messages import AssistantMessage, UserMessage

if TYPE_CHECKING:
    from crab._loop.agent import Agent
    from crab._loop.session import Session

RECAP = "recap"
"""The ``CommandOutput.command`` of a recap (a renderer may show it as the exchanges it repeats);
not ``resume``, the router command that lists sessions."""
RECAP_EXCHANGES = 3
RECAP_CHARS = 600
CLEAR = "\x1b[H\x1b[2J\x1b[3J"
"""Home, clear the screen, clear the scrollback (xterm and every terminal tmux emulates)."""
PICK_PROMPT = "resume which (number or id; Enter starts a new session)> "


def recap(session: Session, exchanges: int = RECAP_EXCHANGES, limit: int = RECAP_CHARS) -> str:
    """The last ``exchanges`` user inputs and final answers of a resumed session, each shortened
    (crab's own notes in the history are not the user's inputs: left out)."""
    from crab._builtin.tool_view import is_note

    pairs: list[tuple[str, str]] = []
    for message in session.messages:
        if isinstance(message, UserMessage):
            if not is_note(message.content):
                pairs.append((message.content, ""))
        elif isinstance(message, AssistantMessage) and message.content and pairs:
            pairs[-1] = (pairs[-1][0], message.content)

    def short(text: str) -> str:
        text = text.strip()
        return text if len(text) <= limit else text[: limit - 1] + "…"

    lines = [f"… earlier in session {session.id}:"] if len(pairs) > exchanges else [f"session {session.id}:"]
    for said, answered in pairs[-exchanges:]:
        lines.append(f"> {short(said)}")
        if answered:
            lines.append(short(answered))
    return "\n".join(lines) + "\n" if pairs else ""


async def picker_text(agent: Agent) -> tuple[list[str], str]:
    """The ids ``crab chat -r`` offers and the numbered list that shows them."""
    from crab._builtin.session_commands import RECENT, session_lines
    from crab._loop.handle import LoopHandle as AgentHandle

    sessions = await agent.recent_sessions(RECENT)
    if not sessions:
        return [], f"no earlier session in this folder in the {agent.store.name} store; starting a new one\n"
    lines = ["recent sessions of this folder:", *await session_lines(AgentHandle(agent), sessions)]
    return [info.id for info in sessions], agent.redactor.text("\n".join(lines)) + "\n"


def chosen(answer: str, ids: list[str]) -> str | None:
    """The id a typed answer names: a number of the list, an id (or a unique start of one), or
    None for an empty answer; ``UsageError`` for anything else."""
    answer = answer.strip()
    if not answer:
        return None
    if answer.isdigit() and 1 <= int(answer) <= len(ids):
        return ids[int(answer) - 1]
    starting = [found for found in ids if found.startswith(answer)]
    if len(starting) == 1:
        return starting[0]
    if answer.isdigit():
        raise UsageError(f"no session number {answer}: pick 1 to {len(ids)}, or run crab chat -r ID")
    return answer  # an id of an older session: open_session says when there is none


def pick(
    runner: Any, agent: Agent, options: RunOptions, *, interactive: bool, read: Callable[[str], str] = input
) -> RunOptions:
    """``options`` with ``-r`` alone turned into the session the user picked (or none: a new one)."""
    from crab._cli.signals import GATE

    if options.resume != "" or not interactive:
        return options  # off a terminal chat() has refused -r alone already
    ids, text = GATE.run(runner, picker_text(agent))
    sys.stderr.write(text)
    if not ids:
        return replace(options, resume=None)
    try:
        answer = read(PICK_PROMPT)
    except EOFError:
        answer = ""
    return replace(options, resume=chosen(answer, ids))


def clear_screen(agent: Agent, session: Session, said: str, front: object | None = None) -> None:
    """``/clear``: the live input clears its terminal itself when it can (``clear()``); plain
    chat writes the escape sequence to a terminal (never to a pipe). What the command ``said``
    is shown again on the cleared screen."""
    from crab._contracts.events import CommandOutput

    clear = getattr(front, "clear", None)
    if callable(clear):
        clear()
    elif sys.stdout.isatty():
        sys.stdout.write(CLEAR)
        sys.stdout.flush()
    if said:
        agent.emit(CommandOutput("clear", said), session.id)


def show_switch(agent: Agent, session: Session) -> None:
    """The last exchanges of the session chat starts in (``-c``, ``-r``) or switches to (``/resume``,
    ``/fork``), as a recap."""
    from crab._contracts.events import CommandOutput

    shown = recap(session)
    if shown:
        agent.emit(CommandOutput(RECAP, shown), session.id)


def exit_line(agent: Agent, session: Session, store: str | None = None) -> str:
    """What chat prints when it ends: the command that comes back to this session (``store``: the
    ``--store`` it was given); none for the memory store, whose sessions end with the process."""
    if agent.store.name == "memory":
        return ""
    flag = f" --store {store}" if store else ""
    return f"resume this session with: crab chat{flag} -r {session.id}\n"
