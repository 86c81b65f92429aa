"""``crab worker`` and ``crab temporal run``: the commands' bodies. Both end the process with
``os._exit`` once their work and every shutdown hook are done: temporalio's Rust threads can abort
the interpreter while it finalizes (temporalio/sdk-python#300), which would turn an exit 2 for an
unreachable server (or a clean stop) into a crash."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Literal, NoReturn

import crab

from crab_temporal.client import run_turn
from crab_temporal.lines import log_line
from crab_temporal.settings import TemporalSettings

Mode = Literal["ask", "yolo", "read-only", "plan"]


def finish(body: Callable[[], int]) -> NoReturn:
    """Run ``body`` and exit with its code; a crab error is one line and its exit code (2 for
    usage and config), as crab's own commands print them."""
    try:
        code = body()
    except crab.CrabError as exc:
        print(log_line(f"crab: {exc}"), file=sys.stderr)
        code = exc.exit_code
    except (KeyboardInterrupt, asyncio.CancelledError):
        code = 130
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def print_notice(event: crab.events.Event) -> None:
    """A warning the agent gives (a project's trust-only settings it ignored, a plugin that failed)
    as one line on stderr: for an agent with no renderer (a worker, ``-o json``), which would lose it."""
    if isinstance(event, crab.events.NoticeEvent) and event.level != "info":
        # Events reach listeners masked already; masked again here, as every line crab prints.
        print(log_line(f"{event.level}: {event.message}"), file=sys.stderr, flush=True)


def worker_command(model: str | None, plugins: list[str] | None, yolo: bool) -> int:
    from crab_temporal.asking import ask_permission, ask_question
    from crab_temporal.worker import serve

    # A tool call's questions go to the client that holds the user's channel, through the turn's workflow.
    agent = crab.Agent(
        model,
        plugins=plugins,
        permissions="yolo" if yolo else None,
        ask=ask_permission,
        question=ask_question,
        listeners=[print_notice],
    )
    asyncio.run(serve(agent, TemporalSettings.from_config(agent.config)))
    return 0


def permission_flag(yolo: bool, read_only: bool, plan: bool) -> Mode | None:
    """``--yolo``, ``--read-only`` or ``--plan`` as a mode (None: the config's), as ``crab run`` reads them."""
    given = [flag for flag, on in (("--yolo", yolo), ("--read-only", read_only), ("--plan", plan)) if on]
    if len(given) > 1:
        raise crab.UsageError(f"{' and '.join(given)} contradict each other; pick one")
    modes: dict[str, Mode] = {"--yolo": "yolo", "--read-only": "read-only", "--plan": "plan"}
    return modes[given[0]] if given else None


def run_command(
    prompt: str,
    session: str | None,
    model: str | None,
    plugins: list[str] | None,
    output: str,
    permissions: Mode | None = None,
) -> int:
    if output not in ("text", "json"):
        raise crab.UsageError(f"--output takes text or json, not {output!r}")
    # Its mode is the turn's ceiling: the workers narrow theirs to it (crab_temporal.ceiling).
    # -o json has no renderer: its warnings go to stderr (stdout holds the one JSON object).
    text = output == "text"
    agent = crab.Agent(
        model,
        plugins=plugins,
        renderer="plain" if text else None,
        listeners=() if text else [print_notice],
        permissions=permissions,
    )
    settings = TemporalSettings.from_config(agent.config)

    async def go() -> dict[str, object]:
        # Ctrl-C (or SIGTERM) cancels this task: the turn is aborted where it runs and settles,
        # and its end is shown; a second one stops waiting.
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        assert task is not None
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        async with agent:
            return await run_turn(agent, settings, prompt, session)

    result = asyncio.run(go())
    if output == "json":
        doc = {key: result.get(key) for key in ("text", "stop", "error", "session_id", "tool_calls")}
        print(json.dumps(doc, ensure_ascii=False))
    stop = result.get("stop")
    return 130 if stop == "aborted" else 1 if stop == "error" else 0
