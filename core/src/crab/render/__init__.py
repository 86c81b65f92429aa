"""The renderer protocol: objects that show loop events to a person or a program.

Renderers get every event of the turns they watch; the loop itself never prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TextIO

from crab.events import Event


class Renderer(Protocol):
    def handle(self, event: Event) -> None:
        """Show one event. Must not raise for events it does not know; ignore them instead."""
        ...

    def close(self) -> None:
        """Flush what is pending (a final newline, a summary)."""
        ...


@dataclass(frozen=True, slots=True)
class RenderTarget:
    """Where a renderer writes: ``out`` for the answer, ``err`` for progress; ``color`` for ANSI."""

    out: TextIO
    err: TextIO
    color: bool = False
    verbose: bool = False


@dataclass(frozen=True, slots=True)
class RendererSpec:
    """A renderer a plugin offers: ``create(target)`` builds one for a run."""

    name: str
    description: str
    create: Callable[[RenderTarget], Renderer]
    override: bool = False
    plugin: str = ""
