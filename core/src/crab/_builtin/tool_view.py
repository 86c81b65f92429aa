"""The tool view, a built-in plugin: what a request's tools array carries for each tool, the same
bytes on every request of a session (``full``: every schema; ``progressive``: a constant stub per
tool), and the full schema of a tool the user names (``$name``) as a recorded note message
(docs/architecture.md#the-tool-view)."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from crab._contracts.messages import Message, UserMessage
from crab._contracts.providers import ModelRequest
from crab._contracts.tools import Tool, ToolSpec
from crab._host.hookspecs import hookimpl
from crab._values.compaction_text import is_note

if TYPE_CHECKING:
    from crab._contracts.handle import AgentHandle

MAX_LINE = 120
SCHEMA_NOTE = "[crab] Full schema of `{name}`: {schema}"
"""The note recorded after a user message that names a tool (``$name``) the request lists as a stub."""
KEPT_KEYS = ("type", "enum")
"""What a stub keeps of each parameter: enough to call the tool, no descriptions or defaults."""

__all__ = ["SCHEMA_NOTE", "ToolView", "hinted", "is_note", "one_line", "schema_text", "stub", "turn_starts"]


HINT = re.compile(r"\$([A-Za-z_][\w.:-]*)")
"""``$name`` in a user's text asks for a tool's full schema (recorded as a note after the prompt;
naming a tool never costs a model call)."""


def hinted(text: str, known: Collection[str]) -> set[str]:
    """Names of ``known`` tools written as ``$name`` in ``text`` (trailing punctuation ignored)."""
    if "$" not in text:  # most texts hint at nothing: skip the regex
        return set()
    found: set[str] = set()
    for match in HINT.finditer(text):
        name = match.group(1)
        while name and name not in known and name[-1] in ".:-":
            name = name[:-1]
        if name in known:
            found.add(name)
    return found


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """Indexes of the user messages that start a turn (not crab's own notes in the history)."""
    return [i for i, m in enumerate(messages) if isinstance(m, UserMessage) and not is_note(m.content)]


class ToolView:
    """The ``crab.tool_view`` setting as hooks.

    ``progressive``: ``crab_before_model_call`` lists every tool as its constant ``stub``, so the
    tools array never changes while the registry does not; a call is still checked against the
    real schema, and one that fails gets the full schema in its error result (the turn adds it).
    ``crab_prompt_submit`` records a tool's full schema as a note when the user names it
    (``$name``): message content, so the prefix before it stays as it was. ``full``: no change.
    """

    def __init__(self, view: str) -> None:
        self.view = view
        self.handle: AgentHandle | None = None

    @hookimpl
    def crab_startup(self, agent: AgentHandle) -> None:
        self.handle = agent

    @hookimpl(tryfirst=True)
    def crab_before_model_call(self, request: ModelRequest) -> ModelRequest | None:
        if self.view != "progressive" or not request.tools:
            return None
        return replace(request, tools=tuple(stub(spec) for spec in request.tools))

    @hookimpl
    def crab_prompt_submit(self, prompt: str) -> str | None:
        """A note with the full schema of each tool the prompt names (``$name``), in registry order."""
        if self.view != "progressive" or self.handle is None or "$" not in prompt:
            return None
        tools = self.handle.tools
        named = hinted(prompt, tools)
        return "\n".join(schema_note(tool) for name, tool in tools.items() if name in named) or None


def schema_text(tool: Tool | ToolSpec) -> str:
    """``tool``'s full parameter schema as one line of JSON (what a note or an error result shows)."""
    return json.dumps(tool.parameters, ensure_ascii=False, separators=(",", ":"))


def schema_note(tool: Tool) -> str:
    return SCHEMA_NOTE.format(name=tool.name, schema=schema_text(tool))


def one_line(description: str) -> str:
    """A tool description's first sentence (or first paragraph, when that is short enough), cut
    at ``MAX_LINE`` characters."""
    paragraph = " ".join(description.strip().split("\n\n")[0].split())
    if len(paragraph) <= MAX_LINE:
        return paragraph
    end = paragraph.find(". ")
    if 0 < end < MAX_LINE:
        return paragraph[: end + 1]
    return paragraph[: MAX_LINE - 1] + "…"


def stub_parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` cut to what a call needs: each property's type (its enum, the shape of its items
    and nested properties alike), the required names; no descriptions, defaults or bounds (those
    come with the full schema when a call fails it)."""
    return {"type": "object", **_shape(schema)}


def _shape(schema: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {key: schema[key] for key in KEPT_KEYS if key in schema}
    items = schema.get("items")
    if isinstance(items, Mapping):
        kept["items"] = _shape(items)
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and properties:
        kept["properties"] = {
            name: _shape(value) if isinstance(value, Mapping) else {} for name, value in properties.items()
        }
    required = schema.get("required")
    if isinstance(required, list) and required:
        kept["required"] = list(required)
    return kept


_STUBS: dict[tuple[str, str], tuple[Mapping[str, Any], ToolSpec]] = {}


def stub(tool: Tool | ToolSpec) -> ToolSpec:
    """``tool`` as the progressive view lists it: name, one line, ``stub_parameters`` (the same
    object for the same tool, so a request costs a lookup and comparing requests stays cheap)."""
    key = (tool.name, tool.description)
    known = _STUBS.get(key)
    if known is not None and (known[0] is tool.parameters or known[0] == tool.parameters):
        return known[1]
    if len(_STUBS) > 4096:  # descriptions that keep changing (generated tools) must not pile up
        _STUBS.clear()
    made = ToolSpec(tool.name, one_line(tool.description), stub_parameters(tool.parameters))
    _STUBS[key] = (tool.parameters, made)
    return made
