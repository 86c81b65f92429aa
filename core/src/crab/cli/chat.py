"""``crab chat``: the interactive terminal channel (readline history, Ctrl-C aborts, Ctrl-D exits)."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from crab.cli.options import RunOptions
from crab.config import crab_home
from crab.interception import Answer, PermissionRequest
from crab.render import RenderTarget

PROMPT = "crab> "


async def ask_on_terminal(request: PermissionRequest) -> Answer:
    """Ask on the terminal: y = once, a = always for this class in this session, anything else = no."""
    question = f"allow {request.permission}: {request.summary}? [y]es once / [a]lways / [N]o: "

    def read() -> str:
        sys.stderr.write(question)
        sys.stderr.flush()
        line = sys.stdin.readline()
        return line.strip().lower()

    from crab.tools import run_in_thread

    # A daemon thread: Ctrl-C while the question waits must not wait for a line at exit.
    answer = await run_in_thread(read, {})
    if answer in ("y", "yes"):
        return "once"
    if answer in ("a", "always"):
        return "always"
    return "deny"


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


def chat(options: RunOptions) -> None:
    """Read lines until Ctrl-D or /quit; each line is a turn or a command."""
    from crab.cli.runtime import choose_renderer, start_agent
    from crab.cli.setup import open_session, prepare

    interactive = sys.stdin.isatty()
    prepared = prepare(options, ask=ask_on_terminal if interactive else None)
    agent = prepared.agent
    agent.keyboard = interactive  # a typed !cmd is the user's own word (crab/loop/shell.py)
    target = RenderTarget(out=sys.stdout, err=sys.stderr, color=sys.stdout.isatty())
    renderer = choose_renderer(prepared.host, prepared.config, options.renderer, target)
    agent.subscribe(renderer.handle)
    from crab.cli.signals import GATE, Interrupted, turn_stopped

    history = _setup_readline() if interactive else None
    runner = asyncio.Runner()
    try:
        GATE.run(runner, start_agent(agent))
        session = GATE.run(runner, open_session(agent, options))
        if interactive:
            sys.stderr.write(f"crab chat · {agent.provider.name}/{agent.model} · session {session.id}\n")
            sys.stderr.write("Ctrl-C stops a turn, Ctrl-D leaves, /help lists commands.\n")
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
                outcome = GATE.run(runner, agent.handle_input(session, line))
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
