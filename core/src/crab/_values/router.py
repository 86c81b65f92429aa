"""Routing input: ``/name args`` to a command, ``!cmd`` to the shell, ``//text`` and the rest to the
model; ``/name:arg rest`` is ``/name arg rest`` (namespaced commands, as Claude Code and pi write them);
and the "did you mean" hint every unknown name gets. Text work: the agent acts on the ``Route``."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Route:
    """Where input goes: ``model`` (with ``text``), ``command`` (``name`` + ``args``), or ``shell``."""

    kind: Literal["model", "command", "shell"]
    text: str = ""
    name: str = ""
    args: str = ""


def route(text: str) -> Route:
    """Classify one line of input. Leading whitespace is ignored for the prefixes."""
    stripped = text.strip()
    if stripped.startswith("//"):
        return Route("model", text=stripped[1:])
    if stripped.startswith("/") and len(stripped) > 1 and not stripped[1].isspace():
        name, _, args = stripped[1:].partition(" ")
        head, colon, arg = name.partition(":")
        if colon and head:
            name, args = head, f"{arg} {args}"
        return Route("command", name=name, args=args.strip())
    if stripped.startswith("!") and len(stripped) > 1:
        return Route("shell", text=stripped[1:].strip())
    return Route("model", text=text)


def close_matches(name: str, candidates: Iterable[str], limit: int = 3) -> list[str]:
    """Names that look like ``name`` (for "did you mean" hints)."""
    pool = list(candidates)
    found = difflib.get_close_matches(name, pool, n=limit, cutoff=0.5)
    prefixed = [c for c in pool if c.startswith(name[:2]) and c not in found] if len(name) >= 2 else []
    return (found + prefixed)[:limit]


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    matches = close_matches(name, candidates)
    return f" Did you mean: {', '.join(matches)}?" if matches else ""
