"""The progressive tool view, a ``crab_before_model_call`` plugin: every tool a stub until the model
hints at it (``$name``) or calls it, then its full schema to the end of that turn, derived from the
messages so a resume sees the same (docs/architecture.md#context-prompt-tool-view-budget-compaction)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from crab._contracts.messages import AssistantMessage, Message, UserMessage, extends
from crab._contracts.providers import ModelRequest
from crab._contracts.tools import Tool, ToolSpec
from crab._host.hookspecs import hookimpl
from crab._loop.compaction import CONTINUED
from crab._loop.hints import hinted

STUB_PARAMETERS: dict[str, Any] = {"type": "object"}
MAX_LINE = 120
EXPANDED_TURNS = 1
"""A hinted or called tool keeps its full schema to the end of the turn (``bench/context.py``)."""
NOTE_PREFIXES = ("[crab]", CONTINUED)
"""User messages crab itself recorded (a schema note, the start of a compacted tail)."""
REMEMBERED_SESSIONS = 64
"""Sessions whose last scan is kept (``crab serve`` runs many; a forgotten one is scanned anew)."""

__all__ = ["ToolView", "expanded_tools", "hinted", "is_note", "one_line", "stub", "tool_specs", "turn_starts"]


def is_note(text: str) -> bool:
    """Whether a user message's text is crab's own note, not something the user said (a recap or
    a transcript shows it as crab's, or leaves it out)."""
    return text.startswith(NOTE_PREFIXES)


def _starts_turn(message: Message) -> bool:
    return isinstance(message, UserMessage) and not is_note(message.content)


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """Indexes of the user messages that start a turn (not crab's own notes in the history)."""
    return [i for i, m in enumerate(messages) if _starts_turn(m)]


def _mentions(message: Message, known: Collection[str]) -> set[str]:
    """Known tools ``message`` calls or hints at (user or assistant text; tool results never count)."""
    if isinstance(message, AssistantMessage):
        found = {call.name for call in message.tool_calls if call.name in known}
        return found | hinted(message.content, known) if message.content else found
    if isinstance(message, UserMessage):
        return hinted(message.content, known)
    return set()


def expanded_tools(messages: Sequence[Message], known: Iterable[str], *, turns: int = EXPANDED_TURNS) -> set[str]:
    """The tools whose full schema the next request carries: every known tool called or hinted at
    (user or assistant text) in the last ``turns`` turns of ``messages`` (all of them when
    ``turns`` is 0)."""
    names = set(known)
    starts = turn_starts(messages)
    start = starts[-turns] if 0 < turns <= len(starts) else 0
    found: set[str] = set()
    for message in messages[start:]:
        found |= _mentions(message, names)
    return found


@dataclass
class _Scan:
    """What one session's last request showed: its messages and the tools named since its turn began."""

    messages: tuple[Message, ...] = ()
    known: frozenset[str] = frozenset()
    found: set[str] = field(default_factory=set)


class ToolView:
    """``crab_before_model_call``: stubs for the tools the current turn has not used (progressive).

    A call to a stub runs like any other: the tool validates its arguments against the real
    schema. Per session it keeps what it derived from the last request and reads only the messages
    added since, so a request costs the new messages, not the whole turn.
    """

    def __init__(self, view: str) -> None:
        self.view = view
        self._scans: OrderedDict[str, _Scan] = OrderedDict()

    @hookimpl(tryfirst=True)
    def crab_before_model_call(self, request: ModelRequest, session_id: str) -> ModelRequest | None:
        if self.view != "progressive" or not request.tools:
            return None
        expanded = self.expanded(session_id, request.messages, frozenset(spec.name for spec in request.tools))
        return replace(request, tools=tuple(spec if spec.name in expanded else stub(spec) for spec in request.tools))

    def expanded(self, session_id: str, messages: tuple[Message, ...], known: frozenset[str]) -> set[str]:
        """``expanded_tools(messages, known)``, reading only the messages the session's last
        request lacked (the context only grows between compactions and repairs, which scan anew)."""
        scan = self._scans.pop(session_id, None)
        count = len(scan.messages) if scan is not None else 0
        if scan is None or scan.known != known or not extends(messages, scan.messages):
            scan, count = _Scan(known=known), 0
        for message in messages[count:]:
            if _starts_turn(message):
                scan.found = set()
            scan.found |= _mentions(message, known)
        scan.messages = messages
        self._scans[session_id] = scan
        while len(self._scans) > REMEMBERED_SESSIONS:
            self._scans.popitem(last=False)
        return scan.found


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


_STUBS: dict[tuple[str, str], ToolSpec] = {}


def stub(tool: Tool | ToolSpec) -> ToolSpec:
    """``tool`` as the progressive view lists it before it is expanded: name and one line."""
    key = (tool.name, tool.description)
    made = _STUBS.get(key)
    if made is None:
        if len(_STUBS) > 4096:  # descriptions that keep changing (generated tools) must not pile up
            _STUBS.clear()
        made = _STUBS[key] = ToolSpec(tool.name, one_line(tool.description), STUB_PARAMETERS)
    return made


def tool_specs(tools: Mapping[str, Tool], view: str, expanded: Iterable[str]) -> tuple[ToolSpec, ...]:
    """What a request carries for ``tools``: every full schema (``full``), or full schemas for the
    ``expanded`` names and stubs for the rest (``progressive``), in registry order."""
    if view != "progressive":
        return tuple(tool.spec() for tool in tools.values())
    wide = set(expanded)
    return tuple(tool.spec() if name in wide else stub(tool) for name, tool in tools.items())
