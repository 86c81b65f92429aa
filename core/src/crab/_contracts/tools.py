"""Tools: the ``Tool`` object the loop runs, results and context (``@crab.tool`` builds a ``Tool``:
``crab/_values/tool_decorator.py``). The loop carries a call out (``crab/_loop/tool_exec.py``): an
invalid call, a ``ToolError`` or oversized output is a result for the model, never an exception."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from crab._contracts.events import FileDiff
from crab._contracts.images import ImagePart
from crab._contracts.truncate import OutputLimit

if TYPE_CHECKING:
    from crab._contracts.config import Config
    from crab._contracts.events import Event
    from crab._contracts.handle import AgentHandle
    from crab._contracts.interception import AskUser
    from crab._contracts.messages import Usage
    from crab._contracts.questions import AskQuestion

Permission = Literal["read", "write", "exec", "network"]
"""What a tool may do. The permission gate lets ``read`` pass and asks for the others."""

PERMISSIONS: tuple[Permission, ...] = ("read", "write", "exec", "network")


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool gives back. ``content`` and ``images`` go to the model; ``details`` and ``diffs``
    only to renderers, stores and channels (``diffs``: the files the call changed, see ``FileDiff``).
    Images are stored once by hash and capped (``[crab] max_image_bytes``)."""

    content: str
    is_error: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)
    diffs: tuple[FileDiff, ...] = ()
    images: tuple[ImagePart, ...] = ()


def _no_event(event: Event) -> None:
    return None


def _no_usage(usage: Usage) -> None:
    return None


@dataclass
class ToolContext:
    """What a running tool may know about its call.

    ``state`` is a scratch dict that lives as long as the session (the read gate of the file
    tools keeps its records there); plugins prefix their keys with their own name. ``settings``
    is the tool's plugin's ``[plugins.<name>]`` config table. ``ask`` asks the user through the
    active channel for a permission (None where nobody can answer); ``question`` asks them a
    ``crab.Question`` there and gives their answer, or None for none (``question`` itself is None
    where nobody can answer: say so at once); ``local`` is False on remote channels.
    ``cancelled`` is set when the call is aborted or times out: a sync tool, which keeps running
    in its worker thread, should check it in long loops and stop early.
    ``handle`` is the running agent's ``AgentHandle`` (None where a tool runs without an agent,
    as under ``crab.tools.open_toolbox``): a tool that runs a child agent uses its ``run_child``.
    ``add_usage`` counts model usage the call spent itself (a child agent's) into the turn's.
    """

    session_id: str
    workspace: Path
    call_id: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    emit: Callable[[Event], None] = _no_event
    config: Config | None = None
    ask: AskUser | None = None
    local: bool = True
    question: AskQuestion | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    handle: AgentHandle | None = None
    add_usage: Callable[[Usage], None] = _no_usage


Handler = Callable[[dict[str, Any], ToolContext], Awaitable[Any] | Any]

Preview = Callable[[dict[str, Any], ToolContext], Sequence[FileDiff]]
"""What a call would change, computed from its (prepared) arguments without changing anything."""

PREVIEW_TIMEOUT = 5.0
"""Seconds a preview may take before the question is asked without it."""


@dataclass
class Tool:
    """A callable the model can use.

    Build one with ``@crab.tool`` from a typed function, or directly (for tools whose schema
    comes from elsewhere, like MCP servers) with a ``handler(arguments, ctx)``. Arguments are
    validated against the schema before it runs (``crab.tools.run_tool`` runs a call as the loop does).

    - ``permission``: read, write, exec or network (see the permission gate).
    - ``exclusive``: never runs at the same time as another tool call of the same reply.
    - ``timeout``: seconds; ``None`` takes the loop's default.
    - ``override``: this tool intentionally replaces another plugin's tool of the same name.
    - ``output_limit``: content beyond it is cut with a note; ``None`` disables the cut.
    - ``prepare_arguments``: rewrites argument shapes models commonly send, before validation.
    - ``validate_arguments``: check arguments against ``parameters`` before calling.
    - ``preview``: ``preview(arguments, ctx)`` returns the ``FileDiff``s the call would make,
      without making them (the permission question shows them); see ``crab.tools.preview_diffs``.
    - ``blocking``: the handler blocks, so it runs in a daemon thread of its own, abandoned at its
      timeout or abort with ``ctx.cancelled`` set (``@crab.tool`` sets it for a sync function).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    permission: Permission = "read"
    exclusive: bool = False
    timeout: float | None = None
    override: bool = False
    output_limit: OutputLimit | None = field(default_factory=OutputLimit)
    prepare_arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    validate_arguments: bool = True
    plugin: str = ""
    fn: Callable[..., Any] | None = None
    preview: Preview | None = None
    blocking: bool = False

    def spec(self) -> ToolSpec:
        """What a provider needs to describe this tool to the model: made once and kept while
        the tool keeps its name, description and parameters (every request lists every tool)."""
        # Kept in the instance's __dict__, not a field: fields are the tool's public options
        # (docs/plugins.md), compared, copied by dataclasses.replace and shown by repr.
        spec: ToolSpec | None = self.__dict__.get("_spec")
        if (
            spec is None
            or spec.name is not self.name
            or spec.description is not self.description
            or spec.parameters is not self.parameters
        ):
            spec = self.__dict__["_spec"] = ToolSpec(
                name=self.name, description=self.description, parameters=self.parameters
            )
        return spec


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
