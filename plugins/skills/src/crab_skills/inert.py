"""``@server:uri`` in a command or skill an untrusted project wrote: quoted, so it attaches nothing.

A plugin (crab-mcp) may read the resource such a reference names into the prompt; from a cloned
repository's file that would be a read the user never asked for, past the permission gate.
"""

from __future__ import annotations

import re

_REFERENCE = re.compile(r"(?<!\S)(@[A-Za-z0-9][\w.-]*:[A-Za-z][A-Za-z0-9+.-]*:\S+)")
"""``@name:scheme:…`` standing alone: what core's chat leaves for a ``crab_prompt_submit`` plugin."""


def inert(text: str) -> tuple[str, int]:
    """``text`` with each reference in backticks (read as code, no longer standing alone), and
    how many there were."""
    return _REFERENCE.subn(r"`\1`", text)


def untrusted_notice(what: str, count: int) -> str:
    return (
        f"{what} is from a project you have not trusted (crab trust): its {count} @server:uri "
        f"reference{'s' if count != 1 else ''} attach{'es' if count == 1 else ''} nothing"
    )
