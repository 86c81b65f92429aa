"""The ``replay`` provider: serves a running replay's recorded replies, and nothing else.

``crab replay`` hands its script over in this process (``serve``) and names the model id it got
back; the provider answers only those ids. A config that names ``replay/…`` (a repository's
``[crab] model``, say) finds no script and stops with one line: recorded replies never drive a
run the replay did not start itself. No key is needed: nothing leaves the process.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Sequence
from typing import Any

import crab
from crab.testing import ScriptedProvider

NAME = "replay"
CONTEXT_WINDOW = 1_000_000_000
"""So large that the budget never compacts: a compaction would ask for a reply the script lacks."""

NOT_SERVED = "the replay provider only serves a running `crab replay`: choose another model"
Reply = list[dict[str, Any]]


class TurnScript:
    """The recorded replies of each turn; ``begin(n)`` starts turn ``n``, each call takes its next reply.

    Turns are kept apart so a turn that ends early live (a refusal that ends it, the loop guard)
    leaves its unused replies behind instead of handing them to the next turn.
    """

    def __init__(self, turns: Sequence[Sequence[Reply]]) -> None:
        self.turns = [list(replies) for replies in turns]
        self._queue: list[Reply] = []
        self.served = 0

    def begin(self, turn: int) -> None:
        self._queue = list(self.turns[turn])

    def next_reply(self, request: crab.ModelRequest) -> Reply:
        if not self._queue:
            return [{"error": "the recording has no more replies in this turn", "kind": "invalid_request"}]
        self.served += 1
        return self._queue.pop(0)


_SCRIPTS: dict[str, ScriptedProvider] = {}


def serve(script: TurnScript) -> str:
    """Register ``script`` for one replay; returns the model id that plays it."""
    model = f"session-{secrets.token_hex(8)}"
    _SCRIPTS[model] = ScriptedProvider(script.next_reply, name=NAME, model=model)
    return model


def withdraw(model: str) -> None:
    _SCRIPTS.pop(model, None)


class ReplayProvider:
    """A ``crab.Provider`` over the scripts ``serve`` registered in this process."""

    name = NAME

    def __init__(self, config: crab.Config | None = None) -> None:
        self.config = config

    def models(self) -> list[crab.ModelInfo]:
        return [crab.ModelInfo(id=model, provider=NAME, context_window=CONTEXT_WINDOW) for model in _SCRIPTS]

    def _engine(self, model: str) -> ScriptedProvider:
        engine = _SCRIPTS.get(model)
        if engine is None:
            raise crab.ConfigError(NOT_SERVED)
        return engine

    def check(self, model: str) -> None:
        self._engine(model)

    def stream(self, request: crab.ModelRequest) -> AsyncIterator[crab.events.StreamEvent]:
        return self._engine(request.model).stream(request)
