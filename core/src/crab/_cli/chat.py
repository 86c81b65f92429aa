"""``crab chat``: the interactive terminal channel; with a renderer's live input it runs in
``chat_live``, else line by line here (readline history, Ctrl-C aborts, Ctrl-D exits, ``/edit``)."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from crab._cli.options import RunOptions
from crab._config.paths import crab_home
from crab._contracts.interception import Answer, PermissionRequest
from crab._contracts.questions import Question
from crab._contracts.renderers import ChatInput, ChatState

PROMPT = "crab> "


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


def header(
    model: str,
    session_id: str,
    *,
    live: bool,
    width: int | None = None,
    folder: str = "",
    permissions: str = "",
    store: str = "",
) -> str:
    """The lines chat starts with (model, session; the folder, permission mode and store), broken
    between words to the terminal's width (a terminal cuts a long line anywhere, mid-word)."""
    import shutil
    import textwrap

    columns = max(20, width if width is not None else shutil.get_terminal_size((80, 24)).columns)
    keys = "Ctrl-C stops a turn, Ctrl-D leaves, /help lists commands."
    if live:
        keys += " Enter during a turn steers it, Alt-Enter queues a follow-up."
    where = [
        f"{label} {value}" for label, value in (("in", folder), ("permissions", permissions), ("store", store)) if value
    ]
    lines = [
        *textwrap.wrap(f"crab chat · {model} · session {session_id}", columns),
        *(textwrap.wrap(" · ".join(where), columns) if where else []),
        *textwrap.wrap(keys, columns),
    ]
    return "\n".join(lines) + "\n"


def shown_folder(path: Path) -> str:
    """``path`` with the home folder written ``~``."""
    try:
        return f"~/{path.relative_to(Path.home())}" if path != Path.home() else "~"
    except ValueError:
        return str(path)


def chat(options: RunOptions) -> None:
    """Read input until Ctrl-D or /quit; each entry is a turn, a steer, a follow-up or a command.

    ``-c`` and ``-r`` first show the last exchanges, and leaving prints the command that resumes
    the session (``crab._cli.chat_sessions``)."""
    from crab._assembly.choosing import renderer_spec, start_agent, terminal_target
    from crab._cli.chat_sessions import clear_screen, exit_line, pick, show_switch
    from crab._cli.setup import open_session, prepare

    interactive = sys.stdin.isatty()
    if options.resume == "" and not interactive:
        from crab._contracts.errors import UsageError

        raise UsageError("crab chat -r lists sessions to pick from on a terminal: pass -r ID (or -c for the latest)")
    live: list[ChatInput] = []  # the live input, once built: the gate's question goes through it

    async def ask(request: PermissionRequest) -> Answer:
        if live:
            return await live[0].ask(request)
        from crab._cli.question import ask_on_terminal

        return await ask_on_terminal(request)

    async def question(asked: Question) -> str | None:
        # A live input without questions (another renderer's) cannot take one: nobody answers.
        if live:
            ask_question = getattr(live[0], "ask_question", None)
            return await ask_question(asked) if callable(ask_question) else None
        from crab._cli.question import ask_question_on_terminal

        return await ask_question_on_terminal(asked)

    prepared = prepare(options, ask=ask if interactive else None, question=question if interactive else None)
    agent = prepared.agent
    agent.keyboard = interactive  # a typed !cmd is the user's own word (crab/_builtin/shell.py)
    target = terminal_target(agent, color=sys.stdout.isatty())
    spec = renderer_spec(prepared.host, prepared.config, options.renderer, chat=True)
    renderer = spec.create(target)
    agent.subscribe(renderer.handle)
    from crab._cli.signals import GATE, Interrupted, turn_stopped

    state: ChatState | None = None
    if interactive and sys.stdout.isatty() and spec.chat_input is not None:
        from crab._cli.chat_completion import plugin_completions

        commands = agent.commands
        state = ChatState(
            workspace=agent.workspace,
            history=crab_home() / "chat_history",
            commands=tuple(sorted(commands)),
            descriptions={name: command.description for name, command in commands.items()},
            models=tuple(agent.models.configured()),
            complete=plugin_completions(agent),
        )
    history = _setup_readline() if interactive and state is None else None
    runner = asyncio.Runner()
    try:
        GATE.run(runner, start_agent(agent))
        options = pick(runner, agent, options, interactive=interactive)
        session = GATE.run(runner, open_session(agent, options))
        if interactive:
            sys.stderr.write(
                agent.redactor.text(
                    header(
                        agent.model_for(session).name,
                        session.id,
                        live=state is not None,
                        folder=shown_folder(agent.workspace),
                        permissions=str(prepared.config.get("crab.permissions") or "ask"),
                        store=agent.store.name,
                    )
                )
            )
        show_switch(agent, session)  # -c and -r start with the last exchanges
        if state is not None and spec.chat_input is not None:
            from crab._cli.chat_live import live_chat

            live.append(spec.chat_input(renderer, state))
            try:
                session = GATE.run(runner, live_chat(agent, session, live[0], state))
            finally:
                live[0].close()
            renderer.close()
            sys.stderr.write(exit_line(agent, session, options.store))
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
            if interactive:
                edited = _edited(line)
                if edited is None:
                    continue
                line = edited
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
            if outcome.clear_screen:
                clear_screen(agent, session, outcome.text)
            if outcome.switch_session:
                session = GATE.run(runner, agent.switch(session, outcome.switch_session))
                show_switch(agent, session)
        renderer.close()
        if interactive:
            sys.stderr.write(exit_line(agent, session, options.store))
    finally:
        try:
            runner.run(agent.close())
        finally:
            runner.close()
            _save_history(history)


def _edited(line: str) -> str | None:
    """``line``, or for ``/edit [text]`` what the user wrote in ``$EDITOR`` (None: nothing to send)."""
    from crab._values.router import route

    routed = route(line)
    if routed.kind != "command" or routed.name != "edit":
        return line
    from crab._cli.editor import edit_text
    from crab._cli.errors import error_line
    from crab._contracts.errors import CrabError

    try:
        text = edit_text(routed.args)
    except CrabError as exc:
        sys.stderr.write(f"{error_line(str(exc))}\n")
        return None
    if not text.strip():
        sys.stderr.write("(the editor left nothing: nothing was sent)\n")
        return None
    sys.stderr.write(f"{PROMPT}{text}\n")
    return text
