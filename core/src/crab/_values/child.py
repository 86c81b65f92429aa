"""What a child session (``AgentHandle.run_child``) is made of, as values: the model it runs on,
the tools it may use, its title, and its questions labelled for the parent's asker. Running it is
the loop's (``crab._loop.child``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import replace
from typing import TypeVar

from crab._contracts.interception import PermissionRequest
from crab._contracts.providers import Provider
from crab._contracts.questions import Question
from crab._contracts.tools import Tool
from crab._values.model_choice import ModelChoice, choice_of

MAX_TITLE = 80
"""The longest title a child session gets from its label and prompt."""


def child_choice(spec: str | None, providers: Mapping[str, Provider], parent: ModelChoice) -> ModelChoice:
    """What a child session runs on (``AgentHandle.run_child``'s ``model``): ``provider/model``, a
    model of the parent's provider, or (None) the parent's own; ``ConfigError`` when the provider
    refuses the model. Unlike ``/model`` it need not be listed: an agent file may name any model."""
    if not spec:
        return parent
    provider, model_id = parent.provider, spec
    prefix, _, rest = spec.partition("/")
    if rest and prefix in providers:
        provider, model_id = providers[prefix], rest
    if provider is parent.provider and model_id == parent.model:
        return parent
    provider.check(model_id)
    return choice_of(provider, model_id)


def child_title(label: str, prompt: str, title: str | None) -> str:
    """``title``, else ``label: prompt`` on one line, cut to ``MAX_TITLE``."""
    shown = title or f"{label}: {' '.join(prompt.split())}"
    return shown if len(shown) <= MAX_TITLE else shown[: MAX_TITLE - 1] + "…"


def child_tools(registry: Mapping[str, Tool], names: Collection[str] | None, read_only: bool) -> dict[str, Tool]:
    """The registry's tools a child may use: those named (all when None), in registry order,
    without the ones that write or run commands when ``read_only``."""
    chosen = {name: tool for name, tool in registry.items() if names is None or name in names}
    if read_only:
        chosen = {name: tool for name, tool in chosen.items() if tool.permission not in ("write", "exec")}
    return chosen


Q = TypeVar("Q", PermissionRequest, Question)
A = TypeVar("A")


def labelled(
    ask: Callable[[Q], Awaitable[A]] | None, label: str, lock: asyncio.Lock
) -> Callable[[Q], Awaitable[A]] | None:
    """``ask`` (a permission's or a tool's question) with its text prefixed ``[label]``, one
    question at a time (the lock is the parent session's, shared by all its children)."""
    if ask is None:
        return None
    asker = ask

    async def asked(question: Q) -> A:
        if isinstance(question, PermissionRequest):
            question = replace(question, summary=f"[{label}] {question.summary}")
        else:
            question = replace(question, text=f"[{label}] {question.text}")
        async with lock:
            return await asker(question)

    return asked
