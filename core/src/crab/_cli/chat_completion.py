"""What Tab offers in ``crab chat`` beyond its own commands, models and paths: every plugin's
``crab_completions`` for the word typed, with the secrets crab knows masked."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from crab._contracts.errors import PluginError
from crab._loop.handle import LoopHandle as AgentHandle

if TYPE_CHECKING:
    from crab._loop.agent import Agent


def plugin_completions(agent: Agent) -> Callable[[str], list[tuple[str, str]]]:
    """``ChatState.complete`` for ``agent``: the dispatcher's pairs for a word, masked; [] when a
    plugin fails, even under ``CRAB_STRICT_PLUGINS`` (its line is kept: typing must go on)."""
    handle = AgentHandle(agent)

    def complete(word: str) -> list[tuple[str, str]]:
        if not word:
            return []
        try:
            found = agent.host.dispatch.completions(agent=handle, word=word)
        except PluginError:
            return []
        redact = agent.redactor.text
        return [(redact(text), redact(about)) for text, about in found]

    return complete
