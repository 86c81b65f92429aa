"""Tool hints: ``$name`` in a message's text, how a model asks for a tool's full description (the
turn gives such a reply one more step; the tool view describes hinted tools fully)."""

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
