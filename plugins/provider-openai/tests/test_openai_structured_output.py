"""A typed library run (``crab.Agent(output_type=...)``) on OpenAI: the schema goes in the request's
``response_format`` (json_schema), the prompt and the rest of the body stay as an untyped run sends
them, and the streamed JSON answer (fixtures/structured_output.sse, its header names the source of
the wire format) becomes the typed ``result.output``. Through a real agent and the replay server."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import crab
from crab.testing import ReplayServer

QUIET = {"user_config": False, "project_config": False, "environment": False, "plugins": []}


@dataclass
class City:
    name: str
    population: int


def test_a_typed_run_sends_response_format_and_gets_a_typed_output(
    server: ReplayServer, make_provider: Callable[..., Any], crab_home: Any
) -> None:
    server.script(server.sse("text_usage.sse"), server.sse("structured_output.sse"))
    with crab.Agent("gpt-4.1-mini", provider=make_provider(), **QUIET) as agent:
        plain = agent.run_sync("Hello")
        run = agent.run_stream_sync("The biggest city of France?", session=plain.session_id, output_type=City)
        partials = list(run.stream_output_sync())
        result = run.result_sync()
    assert result.output == City("Paris", 2102650)
    assert partials[0] == {"name": "Par"} and partials[-1] == {"name": "Paris", "population": 2102650}
    untyped, typed = (request.body for request in server.requests)
    assert typed["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "City",
            "schema": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
                "required": ["name", "population"],
                "additionalProperties": False,
            },
            "strict": False,
        },
    }
    assert "response_format" not in untyped
    assert typed["messages"][-1] == {"role": "user", "content": "The biggest city of France?"}
    assert typed["messages"][0] == untyped["messages"][0]  # the system prompt, byte for byte
    assert typed.get("tools") == untyped.get("tools")
