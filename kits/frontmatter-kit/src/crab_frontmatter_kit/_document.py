"""Reading a Markdown file with front matter (a documented subset of YAML) and its body.

PyYAML is not a dependency of crab, and a SKILL.md, an agent or a command file needs little of
YAML, so this reader takes exactly this subset and says which line breaks it:

- the file starts with a ``---`` line (a UTF-8 byte-order mark before it is allowed) and the
  front matter ends at the next ``---`` line;
- each entry is ``key: value`` at the start of a line; the value is plain text, or quoted with
  ``"…"`` (``\\"`` and ``\\\\`` escapes) or ``'…'`` (``''`` for a quote);
- ``key: >`` and ``key: |`` (also ``>-``, ``|-``, ``>+``, ``|+``) start a block: the indented
  lines after it, folded into one line (``>``) or kept as lines, dedented (``|``);
- an indented line after a plain value continues it (joined with a space), as in YAML;
- ``key: [a, b]`` (a flow list of plain or quoted items) and ``key:`` followed by ``- a`` lines
  (a block list) are lists, kept in ``Document.lists``;
- an indented line after an empty value that is not a list item belongs to a nested value
  (``metadata:`` with ``author: …`` below it), which is skipped;
- blank lines and ``#`` comment lines are skipped.

Anything else (a line at the margin without ``key:``, flow mappings used as keys…) is a
``FrontMatterError`` naming the line; the caller turns it into one warning for the file.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*)|)$")
BLOCK = re.compile(r"^([>|])([+-]?)\s*(?:#.*)?$")
FENCE = "---"


class FrontMatterError(ValueError):
    """The front matter is outside the supported subset; the message names the line."""


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed file: the front matter's top-level scalar values and lists, and the text after it."""

    fields: dict[str, str] = field(default_factory=dict)
    body: str = ""
    lists: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def names(self, key: str) -> tuple[str, ...] | None:
        """``key`` as a list of names: a list's items, or a scalar split at commas and spaces
        (``tools: read, grep`` as Claude Code writes it); None when the key is absent."""
        if key in self.lists:
            return tuple(item for item in self.lists[key] if item)
        if key in self.fields:
            return tuple(part for part in re.split(r"[,\s]+", self.fields[key]) if part)
        return None


def _unquote(value: str, line: int) -> str:
    value = value.strip()
    if not value:
        return ""
    if value[0] == '"':
        if len(value) < 2 or not value.endswith('"'):
            raise FrontMatterError(f"line {line}: a double-quoted value is not closed")
        inner = value[1:-1]
        return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), inner)
    if value[0] == "'":
        if len(value) < 2 or not value.endswith("'"):
            raise FrontMatterError(f"line {line}: a single-quoted value is not closed")
        return value[1:-1].replace("''", "'")
    if " #" in value:  # a comment after a plain value
        value = value.split(" #", 1)[0].rstrip()
    return value


def _block(lines: list[str], style: str, chomp: str) -> str:
    folded = " ".join(part for part in (ln.strip() for ln in lines) if part)
    text = textwrap.dedent("\n".join(lines)).strip("\n") if style == "|" else folded
    if chomp == "+":
        return text + "\n"
    return text


_FLOW_ITEM = re.compile(r"""\s*("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^,]*?)\s*(?:,|$)""")


def _flow_list(value: str, line: int) -> tuple[str, ...]:
    inner = value[1:-1].strip()
    items = (match.group(1) for match in _FLOW_ITEM.finditer(inner) if match.group(1))
    return tuple(_unquote(item, line) for item in items)


def split(text: str, *, expect: tuple[str, ...] = ()) -> Document:
    """Parse ``text`` (a whole file); ``FrontMatterError`` when it breaks the subset.

    ``expect`` names the keys a file of this kind needs; the error for a file without front
    matter says to start with them (``then name: and description:``).
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines()
    if not lines or lines[0].strip() != FENCE:
        hint = f", then {' and '.join(f'{key}:' for key in expect)}" if expect else ""
        raise FrontMatterError(f"no front matter: the file must start with a --- line{hint}")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == FENCE), None)
    if end is None:
        raise FrontMatterError("the front matter is not closed by a --- line")
    fields: dict[str, str] = {}
    lists: dict[str, tuple[str, ...]] = {}
    current: str | None = None  # the key whose value indented lines continue
    mode = ""  # "plain", "block", "nested", "list" (block items) or "flow" ([a, b])
    style = chomp = ""
    pending: list[str] = []

    def finish() -> None:
        if current is None:
            return
        if mode == "block":
            fields[current] = _block(pending, style, chomp)
        elif mode == "plain" and pending:
            more = (p.split(" #", 1)[0].strip() for p in pending)
            fields[current] = " ".join([fields[current], *more]).strip()

    for number in range(1, end):
        raw = lines[number]
        stripped = raw.strip()
        line = number + 1
        item = stripped.startswith("- ") or stripped == "-"
        if item and current is not None and mode in ("nested", "list") and (mode == "list" or not pending):
            mode = "list"
            lists[current] = (*lists.get(current, ()), _unquote(stripped[1:], line))
            continue
        if raw[:1] in (" ", "\t") or item:
            if current is not None and mode == "nested":
                pending.append(stripped)  # a nested mapping: skipped, and no list follows
            elif current is not None and mode in ("plain", "block"):
                pending.append(raw if mode == "block" else stripped)
            elif current is None and stripped and not stripped.startswith("#"):
                raise FrontMatterError(f"line {line}: an indented line before any key")
            continue
        if not stripped:
            if mode == "block":
                pending.append("")
            continue
        if stripped.startswith("#"):
            continue
        match = KEY.match(raw.rstrip())
        if match is None:
            raise FrontMatterError(f"line {line}: expected `key: value`, found {stripped[:40]!r}")
        finish()
        current, value = match.group(1), (match.group(2) or "").strip()
        pending = []
        block = BLOCK.match(value)
        if block:
            mode, style, chomp = "block", block.group(1), block.group(2)
        elif not value:
            mode = "nested"
            fields.pop(current, None)
        elif value.startswith("[") and value.endswith("]"):
            mode = "flow"
            fields.pop(current, None)
            lists[current] = _flow_list(value, line)
        else:
            mode = "plain"
            fields[current] = _unquote(value, line)
    finish()
    body = "\n".join(lines[end + 1 :]).strip("\n")
    return Document(fields, body, lists)
