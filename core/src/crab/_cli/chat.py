"""``crab chat``: the interactive terminal channel.

With a renderer that offers a live input (``RendererSpec.chat_input``) on a terminal, the chat runs
in ``crab._cli.chat_live`` (type while it works). Otherwise it reads line by line here (readline
history, Ctrl-C aborts the turn, Ctrl-D exits). Either way ``-c`` first shows the last exchanges.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from crab._cli.options import RunOptions
from crab._config.paths import crab_home
from crab._contracts.interception import Answer, PermissionRequest
from crab._contracts.messages import AssistantMessage, UserMessage
from crab._contracts.renderers import ChatInput, ChatState, RenderTarget
from crab._loop.session import Session

PROMPT = "crab> "
RECAP_EXCHANGES = 3
RECAP_CHARS = 600


def _setup_readline() -> Path | None:
    try:
        import readline
    except ImportError:
        return None
    history = crab_home() / "history"
    try:
        readline.read_history_file(history)
    except OSError:
        pass
    readline.set_history_length(2000)
    return history


def _save_history(history: Path | None) -> None:
    if history is None:
        return
    import readline

    try:
        history.parent.mkdir(parents=True, exist_ok=True)
        readline.write_history_file(history)
    except OSError:
        pass


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


def header(model: str, session_id: str, *, live: bool, width: int | None = None) -> str:
    """The lines chat starts with, broken between words to the terminal's width (a terminal cuts
    a long line anywhere, mid-word)."""
    import shutil
    import textwrap

    columns = max(20, width if width is not None else shutil.get_terminal_size((80, 24)).columns)
    keys = "Ctrl-C stops a turn, Ctrl-D leaves, /help lists commands."
    if live:
        keys += " Enter during a turn steers it, Alt-Enter queues a follow-up."
    lines = [*textwrap.wrap(f"crab chat · {model} · session {session_id}", columns), *textwrap.wrap(keys, columns)]
    return "\n".join(lines) + "\n"


def chat(options: RunOptions) -> None:
    """Read input until Ctrl-D or /quit; each entry is a turn, a steer, a follow-up or a command."""
    from crab._assembly.choosing import renderer_spec, start_agent
    from crab._cli.setup import open_session, prepare

    interactive = sys.stdin.isatty()
    live: list[ChatInput] = []  # the live input, once built: the gate's question goes through it

    async def ask(request: PermissionRequest) -> Answer:
        if live:
            return await live[0].ask(request)
        from crab._cli.question import ask_on_terminal

        return await ask_on_terminal(request)

    prepared = prepare(options, ask=ask if interactive else None)
    agent = prepared.agent
    agent.keyboard = interactive  # a typed !cmd is the user's own word (crab/_loop/shell.py)
    target = RenderTarget(
        out=sys.stdout,
        err=sys.stderr,
        color=sys.stdout.isatty(),
        model=agent.model,
        context_window=agent.known_context_window(),
    )
    spec = renderer_spec(prepared.host, prepared.config, options.renderer, chat=True)
    renderer = spec.create(target)
    agent.subscribe(renderer.handle)
    from crab._cli.signals import GATE, Interrupted, turn_stopped

    state: ChatState | None = None
    if interactive and sys.stdout.isatty() and spec.chat_input is not None:
        state = ChatState(
            workspace=agent.workspace, history=crab_home() / "chat_history", commands=tuple(sorted(agent.commands))
        )
    history = _setup_readline() if interactive and state is None else None
    runner = asyncio.Runner()
    try:
        GATE.run(runner, start_agent(agent))
        session = GATE.run(runner, open_session(agent, options))
        if interactive:
            sys.stderr.write(header(f"{agent.provider.name}/{agent.model}", session.id, live=state is not None))
        shown = recap(session)
        if shown:
            from crab._contracts.events import CommandOutput

            agent.emit(CommandOutput("resume", shown), session.id)
        if state is not None and spec.chat_input is not None:
            from crab._cli.chat_live import live_chat

            live.append(spec.chat_input(renderer, state))
            try:
                GATE.run(runner, live_chat(agent, session, live[0], state))
            finally:
                live[0].close()
            renderer.close()
            return
        from crab._cli.attach import send_line

        while True:
            try:
                line = input(PROMPT if interactive else "")
            except EOFError:
                break
            except (KeyboardInterrupt, Interrupted) as exc:
                if isinstance(exc, Interrupted) and exc.signum != signal.SIGINT:
                    raise
                turn_stopped()
                sys.stderr.write("\n")
                continue
            if not line.strip():
                continue
            try:
                outcome = GATE.run(runner, send_line(agent, session, line))  # @pic.png attaches it
            except (KeyboardInterrupt, Interrupted) as exc:
                if isinstance(exc, Interrupted) and exc.signum != signal.SIGINT:
                    raise
                turn_stopped()
                sys.stderr.write("\n(turn stopped)\n")
                continue
            if outcome.quit:
                break
            if outcome.switch_session:
                session = GATE.run(runner, agent.resume(outcome.switch_session))
        renderer.close()
    finally:
        try:
            runner.run(agent.close())
        finally:
            runner.close()
            _save_history(history)
