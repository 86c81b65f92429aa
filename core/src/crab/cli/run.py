"""``crab run``: one turn, rendered as text, one JSON object, or JSON lines; exit code from the outcome."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from crab.events import Event, ToolCallEvent, ToolResultEvent
from crab.loop.session import TurnOutcome
from crab.messages import FORMAT_VERSION, usage_to_dict
from crab.render import RenderTarget

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def exit_code(outcome: TurnOutcome) -> int:
    """0 for an answer (also at the iteration cap), 1 for a model/tool failure or guard stop, 130 for an abort."""
    if outcome.stop in ("end", "max_iterations"):
        return EXIT_OK
    if outcome.stop == "command":
        return EXIT_FAILED if outcome.error else EXIT_OK
    if outcome.stop == "aborted":
        return EXIT_INTERRUPTED
    return EXIT_FAILED


class JsonCollector:
    """Collects what ``--output json`` prints at the end: the answer, tool calls and usage."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, Any]] = {}
        self.errors: list[str] = []

    def handle(self, event: Event) -> None:
        if isinstance(event, ToolCallEvent):
            self.calls[event.call.id] = {
                "id": event.call.id,
                "name": event.call.name,
                "arguments": event.call.arguments,
            }
        elif isinstance(event, ToolResultEvent):
            entry = self.calls.setdefault(event.call_id, {"id": event.call_id, "name": event.name})
            entry["is_error"] = event.is_error
            entry["result"] = event.content

    def close(self) -> None:
        return None

    def document(self, outcome: TurnOutcome) -> dict[str, Any]:
        return {
            "v": FORMAT_VERSION,
            "session_id": outcome.session_id,
            "stop": outcome.stop,
            "text": outcome.text,
            "error": outcome.error,
            "usage": usage_to_dict(outcome.usage),
            "tool_calls": list(self.calls.values()),
        }


def _read_prompt(prompt: str) -> str:
    if prompt != "-":
        return prompt
    text = sys.stdin.read()
    if not text.strip():
        from crab.errors import UsageError

        raise UsageError("no prompt on stdin (crab run - reads the prompt from standard input)")
    return text


def _can_ask() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def run_once(prompt: str, output: str, options: dict[str, Any]) -> int:
    """Run one turn; returns the process exit code."""
    from crab.cli.chat import ask_on_terminal
    from crab.cli.runtime import choose_renderer
    from crab.cli.setup import open_session, prepare

    text = _read_prompt(prompt)
    prepared = prepare(options, ask=ask_on_terminal if _can_ask() and prompt != "-" else None)
    agent = prepared.agent
    target = RenderTarget(out=sys.stdout, err=sys.stderr, color=sys.stdout.isatty() and sys.stderr.isatty())
    collector: JsonCollector | None = None
    if output == "json":
        collector = JsonCollector()
        agent.subscribe(collector.handle)
    elif output == "jsonl":
        jsonl = choose_renderer(prepared.host, prepared.config, "jsonl", target)
        agent.subscribe(jsonl.handle)
    else:
        renderer = choose_renderer(prepared.host, prepared.config, options.get("renderer"), target)
        agent.subscribe(renderer.handle)

    async def main() -> TurnOutcome:
        await agent.start()
        try:
            session = await open_session(agent, options)
            return await agent.handle_input(session, text)
        finally:
            await agent.close()

    from crab.cli.signals import GATE, Interrupted

    runner = asyncio.Runner()
    try:
        outcome = GATE.run(runner, main())
    except Interrupted as exc:
        sys.stderr.write(f"{exc.message}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("crab: interrupted\n")
        return EXIT_INTERRUPTED
    finally:
        runner.close()
    if collector is not None:
        print(json.dumps(collector.document(outcome), ensure_ascii=False))
    return exit_code(outcome)
