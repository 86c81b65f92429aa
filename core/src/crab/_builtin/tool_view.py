"""The progressive tool view: which tool schemas a request carries.

With ``[crab] tool_view = "progressive"`` (the default) every tool is sent as a stub (its name
and one sentence, an empty schema) until the model hints at it (``$name`` in a message's text)
or calls it; from the next request on, to the end of that turn, its full schema is sent. A
turn uses a few tools, so each request pays for those, not for every tool a session has
(``bench/context.py``). Which tools are expanded is derived from the messages in context (plus
what a compaction anchor carried over), never kept aside, so it survives a resume. A call to
a stub runs like any other: the tool validates the arguments against its real schema, so an
invalid call gets an error result, and the schema is expanded either way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crab._builtin.compaction import CONTINUED
from crab._contracts.messages import AssistantMessage, Message, UserMessage
from crab._contracts.tools import Tool, ToolSpec

VIEWS = ("progressive", "full")
HINT = re.compile(r"\$([A-Za-z_][\w.:-]*)")
STUB_PARAMETERS: dict[str, Any] = {"type": "object"}
MAX_LINE = 120
EXPANDED_TURNS = 1
"""A hinted or called tool keeps its full schema to the end of the turn (``bench/context.py``)."""
NOTE_PREFIXES = ("[crab]", CONTINUED)
"""User messages crab itself recorded (a schema note, the start of a compacted tail)."""


def hinted(text: str, known: Iterable[str]) -> set[str]:
    """Names of ``known`` tools written as ``$name`` in ``text`` (trailing punctuation ignored)."""
    names = set(known)
    found: set[str] = set()
    for match in HINT.finditer(text):
        name = match.group(1)
        while name and name not in names and name[-1] in ".:-":
            name = name[:-1]
        if name in names:
            found.add(name)
    return found


def is_note(text: str) -> bool:
    """Whether a user message's text is crab's own note, not something the user said (a recap or
    a transcript shows it as crab's, or leaves it out)."""
    return text.startswith(NOTE_PREFIXES)


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """Indexes of the user messages that start a turn (not crab's own notes in the history)."""
    return [i for i, m in enumerate(messages) if isinstance(m, UserMessage) and not is_note(m.content)]


def expanded_tools(
    messages: Sequence[Message], known: Iterable[str], carried: Iterable[str] = (), *, turns: int = EXPANDED_TURNS
) -> set[str]:
    """The tools whose full schema the next request carries: every known tool called or hinted at
    (user or assistant text) in the last ``turns`` turns of ``messages`` (all of them when
    ``turns`` is 0). ``carried`` (what a compaction anchor kept) counts while the window reaches
    back to the anchor, that is while the turn that was compacted mid-way is still running."""
    names = set(known)
    starts = turn_starts(messages)
    start = starts[-turns] if 0 < turns <= len(starts) else 0
    found = {name for name in carried if name in names} if start == 0 else set()
    for message in messages[start:]:
        if isinstance(message, AssistantMessage):
            found.update(call.name for call in message.tool_calls if call.name in names)
            found |= hinted(message.content, names)
        elif isinstance(message, UserMessage):
            found |= hinted(message.content, names)
    return found


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


def stub(tool: Tool | ToolSpec) -> ToolSpec:
    """``tool`` as the progressive view lists it before it is expanded: name and one line."""
    return ToolSpec(tool.name, one_line(tool.description), dict(STUB_PARAMETERS))


def tool_specs(tools: Mapping[str, Tool], view: str, expanded: Iterable[str]) -> tuple[ToolSpec, ...]:
    """What a request carries for ``tools``: every full schema (``full``), or full schemas for the
    ``expanded`` names and stubs for the rest (``progressive``), in registry order."""
    if view != "progressive":
        return tuple(tool.spec() for tool in tools.values())
    wide = set(expanded)
    return tuple(tool.spec() if name in wide else stub(tool) for name, tool in tools.items())
