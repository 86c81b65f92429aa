"""A ``tool_choice`` in ``extra_body`` that forces a tool names it to crab, which then sends that
tool's full schema instead of the progressive view's stub (``Provider.forced_tools``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from crab import ModelRequest, ToolSpec
from crab.messages import UserMessage

SPECS = (ToolSpec("read", "", {"type": "object"}), ToolSpec("grep", "", {"type": "object"}))


@pytest.mark.parametrize(
    ("choice", "forced"),
    [({"type": "tool", "name": "read"}, {"read"}), ({"type": "any"}, {"read", "grep"}), ({"type": "auto"}, set())],
)
def test_forced_tools_reads_the_configured_tool_choice(
    make_provider: Callable[..., Any], choice: Any, forced: set[str]
) -> None:
    provider = make_provider(extra_body={"tool_choice": choice})
    assert provider.forced_tools(ModelRequest("m", "", (UserMessage("x"),), SPECS)) == forced
    model_only = make_provider(models={"m": {"extra_body": {"tool_choice": choice}}})
    assert model_only.forced_tools(ModelRequest("m", "", (UserMessage("x"),), SPECS)) == forced
    assert model_only.forced_tools(ModelRequest("other", "", (UserMessage("x"),), SPECS)) == set()
