"""Decision objects returned by the interception hooks (``crab_before_tool_call`` and friends):
``Deny`` refuses (the model gets the reason as the call's result; the first ``Deny`` wins),
``Replace`` runs the call with other arguments, ``None``/``Allow`` lets it pass."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from crab._contracts.events import FileDiff


@dataclass(frozen=True, slots=True)
class Allow:
    """Let the call run as it is."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Refuse the call; ``reason`` is what the model (and the user) is told.

    ``end_turn`` also ends the turn once the reply's calls already started have ended (the loop
    guard does, for a model stuck repeating itself): the rest are skipped, each with a result.
    """

    reason: str
    end_turn: bool = False


@dataclass(frozen=True, slots=True)
class Replace:
    """Run the call with these arguments instead."""

    arguments: Mapping[str, Any] = field(default_factory=dict)


Decision = Allow | Deny | Replace

Answer = Literal["once", "always", "deny"]
"""A user's answer to a permission question: allow this call, allow the class for the session, refuse."""


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """What the permission gate asks the user through the active channel.

    ``diffs`` are the changes the call would make, when its tool can tell before running
    (``Tool.preview``): a terminal shows them under the question, a remote chat a few lines.
    ``call_id`` is the ``ToolCall.id`` the question is about ("" when it is not about one call),
    so a front-end that shows tool calls (an editor over ACP) can attach the question to its call.
    """

    tool: str
    permission: str
    summary: str
    diffs: tuple[FileDiff, ...] = ()
    call_id: str = ""


AskUser = Callable[[PermissionRequest], Awaitable[Answer]]
"""How a channel asks the user; channels that cannot ask give none, and the gate refuses. An asker
that got no answer (nobody there, a wait that ran out) raises ``TimeoutError``: the call is refused
saying nobody answered, which the model must not take for the user's no."""
