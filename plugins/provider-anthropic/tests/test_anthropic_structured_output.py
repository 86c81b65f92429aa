"""A typed library run (``crab.Agent(output_type=...)``) on Anthropic: the schema goes as
``output_config.format`` (structured outputs), the prompt, system and tools stay as an untyped run
sends them, and the streamed JSON text (fixtures/structured_output.sse, its header names the source
of the wire format) becomes the typed ``result.output``. Through a real agent and the replay server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import crab
from crab.testing import ReplayServer

QUIET = {"user_config": False, "project_config": False, "environment": False, "plugins": []}


class City(TypedDict):
    name: str
    population: int


def test_a_typed_run_sends_output_config_and_gets_a_typed_output(
    server: ReplayServer, make_provider: Callable[..., Any], crab_home: Any
) -> None:
    server.script(server.sse("text_usage.sse"), server.sse("structured_output.sse"))
    with crab.Agent("claude-sonnet-4-5", provider=make_provider(), **QUIET) as agent:
        plain = agent.run_sync("Hello")
        result = agent.run_sync("Capital of Norway?", session=plain.session_id, output_type=City)
    assert result.output == {"name": "Oslo", "population": 709037}
    untyped, typed = (request.body for request in server.requests)
    assert typed["output_config"] == {
        "format": {
            "type": "json_schema",
            "schema": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
                "required": ["name", "population"],
                "additionalProperties": False,
            },
        }
    }
    assert "output_config" not in untyped
    assert typed["messages"][-1]["content"][-1]["text"] == "Capital of Norway?"
    assert typed["system"] == untyped["system"] and typed.get("tools") == untyped.get("tools")
