"""Crab tool names for MCP tools: ``<prefix><tool>`` kept within ``^[a-zA-Z0-9_-]{1,64}$``.

Every provider accepts such a name; MCP allows up to 128 characters of ``[A-Za-z0-9._-]`` (and
servers send others). A name that does not fit has its odd characters replaced with ``_`` and,
when still too long or taken, is cut and given a short hash of the original so it stays stable
across runs. ``crab mcp tools`` shows every mapped name next to the original.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection

PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_LEN = 64
_ODD = re.compile(r"[^a-zA-Z0-9_-]")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def crab_name(prefix: str, tool: str, taken: Collection[str] = ()) -> str:
    """The crab name of ``tool`` behind ``prefix``; never one in ``taken``."""
    wanted = f"{prefix}{tool}"
    if PATTERN.match(wanted) and wanted not in taken:
        return wanted
    clean = _ODD.sub("_", wanted) or "tool"
    if len(clean) <= MAX_LEN and clean not in taken:
        return clean
    tail = f"_{_digest(wanted)}"
    name = clean[: MAX_LEN - len(tail)] + tail
    n = 2
    while name in taken:  # two originals that clash even after hashing: count on
        tail = f"_{_digest(wanted)}{n}"
        name = clean[: MAX_LEN - len(tail)] + tail
        n += 1
    return name
