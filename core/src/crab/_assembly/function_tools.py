"""Plain Python functions a program passes in as tools (through ``crab.tool``; a ``crab.Tool`` as it
is), registered as one plugin of their own, so the gate, interceptors and timeouts treat them alike."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from crab._contracts.errors import UsageError
from crab._contracts.tools import Tool
from crab._host.hookspecs import hookimpl
from crab._values.tool_decorator import tool

if TYPE_CHECKING:
    from crab._contracts.config import Config

PLUGIN = "program-tools"
"""The plugin name a program's own tools are listed under (``crab plugins list`` style records)."""


def as_tools(items: Sequence[Tool | Callable[..., Any]]) -> list[Tool]:
    """Each item as a ``crab.Tool``; a function that cannot be one is a ``UsageError`` saying why."""
    tools: list[Tool] = []
    for item in items:
        if isinstance(item, Tool):
            tools.append(item)
            continue
        if not callable(item):
            raise UsageError(f"tools= takes functions or crab.Tool objects, not {type(item).__name__}")
        try:
            tools.append(tool(item))
        except (TypeError, ValueError) as exc:
            name = getattr(item, "__name__", repr(item))
            raise UsageError(f"cannot make a tool of {name}: {exc}") from None
    names = [t.name for t in tools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"two tools are named {', '.join(twice)}; give one another name with crab.tool(name=...)")
    return tools


class FunctionTools:
    """The plugin object holding a program's tools (one per agent: nothing is registered globally)."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = list(tools)

    @hookimpl
    def crab_tools(self, config: Config) -> list[Tool]:
        return list(self.tools)
