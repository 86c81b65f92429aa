"""A ``tool_choice`` in ``extra_body`` that forces a tool: the request carries that tool's full schema.

Under the progressive tool view every other tool stays a stub (its parameters' shape, without
descriptions, defaults or ``additionalProperties``). Before, the forced tool went as its stub
too, and a small model forced to call ``read`` answered with the stub itself as its arguments.
Checked on the request bodies the replay server (a real HTTP server on 127.0.0.1) records,
through a real agent turn.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import crab
import pytest
from crab import ModelRequest, ToolSpec
from crab.messages import UserMessage
from crab.testing import AgentHarness, ReplayServer

FORCE_READ = {"type": "function", "function": {"name": "read"}}
STUB = {"type": "object"}
GREP_STUB = {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}
"""How the progressive view lists ``grep``: the shape of its parameters, nothing more."""


@crab.tool
def read(path: str, limit: int = 200) -> str:
    """Read a file."""
    return f"read {path} {limit}"


@crab.tool
def grep(pattern: str) -> str:
    """Search files for a pattern."""
    return f"grep {pattern}"


TOOLS = {"files": types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [read, grep]))}


def sent_tools(server: ReplayServer, make_provider: Callable[..., Any], tool_choice: Any) -> dict[str, Any]:
    server.script(server.sse("text_usage.sse"))
    harness = AgentHarness(provider=make_provider(extra_body={"tool_choice": tool_choice}), plugins=TOOLS)
    try:
        outcome = harness.run("what does settings.py read?")
    finally:
        harness.close()
    assert outcome.stop == "end", outcome.error
    (request,) = server.requests
    assert request.body["tool_choice"] == tool_choice
    return {t["function"]["name"]: t["function"]["parameters"] for t in request.body["tools"]}


def test_the_forced_tool_goes_with_its_full_schema(server: ReplayServer, make_provider: Callable[..., Any]) -> None:
    tools = sent_tools(server, make_provider, FORCE_READ)
    assert tools["read"] == read.parameters  # its default and additionalProperties included
    assert tools["grep"] == GREP_STUB


def test_required_sends_every_schema(server: ReplayServer, make_provider: Callable[..., Any]) -> None:
    tools = sent_tools(server, make_provider, "required")
    assert tools == {"read": read.parameters, "grep": grep.parameters}


@pytest.mark.parametrize(
    ("choice", "forced"),
    [
        (FORCE_READ, {"read"}),
        ("required", {"read", "grep"}),
        ("auto", set()),
        ({"type": "function", "function": {"name": "not_offered"}}, set()),
    ],
)
def test_forced_tools_reads_the_configured_tool_choice(
    make_provider: Callable[..., Any], choice: Any, forced: set[str]
) -> None:
    provider = make_provider(extra_body={"tool_choice": choice})
    specs = (ToolSpec("read", "", STUB), ToolSpec("grep", "", STUB))
    assert provider.forced_tools(ModelRequest("m", "", (UserMessage("x"),), specs)) == forced
    assert provider.forced_tools(ModelRequest("m", "", (UserMessage("x"),))) == set()  # the tool-less last call
