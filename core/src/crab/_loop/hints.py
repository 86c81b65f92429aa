"""Tool hints: ``$name`` in a user's text asks for a tool's full schema (the progressive tool view
records it as a note after the prompt; naming a tool never costs a model call)."""

from __future__ import annotations

import re
from collections.abc import Collection

HINT = re.compile(r"\$([A-Za-z_][\w.:-]*)")


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
