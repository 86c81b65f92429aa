"""``crab run``: one turn, rendered as text, one JSON object, or JSON lines; exit code from the outcome."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crab._assembly.result import ResultCollector
from crab._cli.options import RunOptions
from crab._contracts.events import Event, NoticeEvent
from crab._contracts.messages import FORMAT_VERSION
from crab._contracts.renderers import Renderer
from crab._loop.session import TurnOutcome
from crab._values.message_json import usage_to_dict
from crab._values.utf8 import json_text

if TYPE_CHECKING:
    from crab._assembly.output import OutputSpec
    from crab._contracts.images import ImagePart
    from crab._loop.agent import Agent

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130


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
    """Collects what ``--output json`` prints at the end: the answer, tool calls and usage.

    The tool calls are gathered as a library run gathers them (``crab._assembly.result``).
    Warnings (a plugin failure, the iteration cap) go to stderr as they happen, as in text mode.
    """

    def __init__(self) -> None:
        self.collected = ResultCollector()

    def handle(self, event: Event) -> None:
        if isinstance(event, NoticeEvent) and event.level == "warning":
            sys.stderr.write(f"warning: {event.message}\n")  # stdout holds only the JSON document
        self.collected.handle(event)

    def close(self) -> None:
        return None

    def document(self, outcome: TurnOutcome) -> dict[str, Any]:
        calls: list[dict[str, Any]] = []
        for record in self.collected.calls.values():
            call: dict[str, Any] = {"id": record.id, "name": record.name, "arguments": dict(record.arguments)}
            if record.result is not None:
                call["is_error"] = record.is_error
                call["result"] = record.result
            calls.append(call)
        return {
            "v": FORMAT_VERSION,
            "session_id": outcome.session_id,
            "stop": outcome.stop,
            "text": outcome.text,
            "error": outcome.error,
            "usage": usage_to_dict(outcome.usage),
            "tool_calls": calls,
        }


def _read_prompt(prompt: str) -> str:
    if prompt != "-":
        return prompt
    text = sys.stdin.read()
    if not text.strip():
        from crab._contracts.errors import UsageError

        raise UsageError("no prompt on stdin (crab run - reads the prompt from standard input)")
    return text


def _attachments(paths: tuple[Path, ...]) -> list[ImagePart]:
    """The images of ``--attach``, read before anything starts (a bad one is a usage error, exit 2)."""
    if not paths:  # the common run: no image reader to import
        return []
    from crab._cli.attach import load_image

    return [load_image(path, Path.cwd()) for path in paths]


def _can_ask() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def run_once(
    prompt: str,
    output: str,
    options: RunOptions,
    attach: tuple[Path, ...] = (),
    output_schema: Path | None = None,
    engine: str | None = None,
) -> int:
    """Run one turn (with the images ``attach`` names); returns the process exit code. With
    ``output_schema`` the answer must match that JSON schema (``typed_turn``) and stdout is the
    answer's JSON value alone (``--output json``: the document with its ``output``). With
    ``engine`` the turn runs on the turn engine a plugin offers by that name (``crab_turn_engines``)."""
    from crab._assembly.choosing import choose_renderer, start_agent, terminal_target
    from crab._cli.engines import turn_engine
    from crab._cli.setup import open_session, prepare

    if options.renderer and output != "text":
        from crab._contracts.errors import UsageError

        raise UsageError(f"--renderer picks how text output looks; drop it or drop --output {output}")
    spec = _output_spec(output_schema, output)
    if engine is not None and (spec is not None or attach):
        from crab._contracts.errors import UsageError

        raise UsageError("--engine runs a plain prompt: drop --attach and --output-schema (or --engine)")
    text = _read_prompt(prompt)
    images = _attachments(attach)
    objects = _output_route(spec)
    if _can_ask() and prompt != "-":
        from crab._cli.question import ask_on_terminal, ask_question_on_terminal

        prepared = prepare(options, ask=ask_on_terminal, question=ask_question_on_terminal, objects=objects)
    else:  # scripts, pipes and tests: nobody at a terminal, so no terminal asker to import
        prepared = prepare(options, ask=None, question=None, objects=objects)
    agent = prepared.agent
    target = terminal_target(agent)
    collector: JsonCollector | None = None
    renderer: Renderer
    typed: list[Any] = []  # the answer's value, or the OutputError, once the turn ended
    if output == "json" or spec is not None:
        renderer = collector = JsonCollector()
    else:
        renderer = choose_renderer(
            prepared.host, prepared.config, "jsonl" if output == "jsonl" else options.renderer, target
        )
    run_on = turn_engine(prepared.host, prepared.config, engine) if engine is not None else None
    agent.subscribe(renderer.handle)

    async def main() -> TurnOutcome:
        await start_agent(agent)
        try:
            if run_on is not None:
                return await _on_engine(agent, options, run_on, text)
            session = await open_session(agent, options)
            if images:
                agent.notice(
                    f"attached {', '.join(f'{path} ({i.describe()})' for path, i in zip(attach, images, strict=True))}"
                )
            if spec is not None:
                from crab._assembly.output import typed_turn

                retries = int(agent.config.get("crab.output_retries", OUTPUT_RETRIES))
                outcome, value, failed = await typed_turn(agent, session, text, spec, retries, images)
                typed.extend((value, failed))
                return outcome
            return await agent.handle_input(session, text, images=images)
        finally:
            await agent.close()

    from crab._cli.signals import GATE, Interrupted

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
        renderer.close()
    if spec is not None and typed:
        value, failed = typed
        if failed is not None:
            from crab._cli.errors import error_line

            sys.stderr.write(f"{error_line(f'crab: {failed}')}\n")
            return EXIT_FAILED
        if output != "json":
            if outcome.stop == "end":
                print(json_text(agent.redactor.payload({"output": value})["output"]))
            elif outcome.error:
                sys.stderr.write(f"crab: {agent.redactor.text(outcome.error)}\n")
            return exit_code(outcome)
    if collector is not None:
        # The collector saw only redacted events; the outcome's own text and error are masked here.
        document = collector.document(outcome)
        if spec is not None:
            document["output"] = typed[0] if typed else None
        print(json_text(agent.redactor.payload(document)))
    return exit_code(outcome)


async def _on_engine(
    agent: Agent, options: RunOptions, engine: Callable[..., Awaitable[Any]], text: str
) -> TurnOutcome:
    """One turn of the session ``options`` name (or a new one) on ``engine``."""
    from crab._contracts.errors import CrabError
    from crab._loop.turn_steps import turn_steps

    session_id: str | None = None
    if options.session or options.resume or options.continue_latest:
        from crab._cli.setup import open_session

        session_id = (await open_session(agent, options)).id
    steps = await turn_steps(agent, session_id, title=" ".join(text.split())[:60])
    outcome = await engine(steps, text, agent.config)
    if not isinstance(outcome, TurnOutcome):
        raise CrabError(f"the turn engine returned {type(outcome).__name__}, not a crab.steps.TurnOutcome")
    return outcome


OUTPUT_RETRIES = 1
"""How often ``crab run --output-schema`` sends an answer that does not match back to the model,
unless ``[crab] output_retries`` says."""


def _output_spec(path: Path | None, output: str) -> OutputSpec | None:
    """The schema of ``--output-schema`` (read before anything starts: a bad file is exit 2)."""
    if path is None:
        return None
    from crab._assembly.output import schema_file
    from crab._contracts.errors import UsageError

    if output == "jsonl":
        raise UsageError("--output-schema prints the answer's JSON; drop --output jsonl (or the schema)")
    return schema_file(path)


def _output_route(spec: OutputSpec | None) -> dict[str, object] | None:
    if spec is None:
        return None
    from crab._assembly.output import OutputRoute

    return {"run-output": OutputRoute(spec)}
