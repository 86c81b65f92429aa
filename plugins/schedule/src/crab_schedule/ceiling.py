"""The permission ceiling of agent jobs: a job's turn never gets more than its creator had.

While an agent job runs in a session, that session's tool calls are held to the permission mode
recorded when the job was added (``Job.permissions``), on top of core's own gate: ``read-only``
refuses write and exec; ``ask`` leaves the question to core's gate (it asks the person at the
session's channel, and refuses where nobody can answer, as for a terminal job under ``crab
serve``), and where ``crab serve`` itself runs ``yolo`` it refuses write, exec and network calls
rather than make them unasked; ``yolo`` adds no limit beyond what ``crab serve`` applies.
"""

from __future__ import annotations

from collections import Counter

import crab

_MODES: dict[str, Counter[str]] = {}
_ORDER = {"read-only": 0, "ask": 1, "yolo": 2}


def hold(session_id: str, mode: str) -> None:
    """Apply ``mode`` to ``session_id`` until ``release`` (the narrowest held mode wins)."""
    _MODES.setdefault(session_id, Counter())[mode] += 1


def release(session_id: str, mode: str) -> None:
    held = _MODES.get(session_id)
    if held is None:
        return
    held[mode] -= 1
    if held[mode] <= 0:
        del held[mode]
    if not held:
        del _MODES[session_id]


def mode_for(session_id: str) -> str | None:
    held = _MODES.get(session_id)
    if not held:
        return None
    return min(held, key=lambda m: _ORDER.get(m, 0))


async def decide(tool: crab.Tool, ctx: crab.ToolContext) -> crab.hooks.Decision | None:
    """None (core's gate decides) or a ``Deny``/``Allow`` under the job's recorded mode."""
    mode = mode_for(ctx.session_id)
    if mode is None or tool.permission == "read" or mode == "yolo":
        return None
    permission = tool.permission
    if mode not in _ORDER:
        mode = "read-only"  # an unknown recorded mode is the narrowest, never the widest
    if mode == "read-only" and permission in ("write", "exec"):
        return crab.hooks.Deny(
            f"Refused: {tool.name} needs {permission} permission and this scheduled job was added "
            "by a read-only session, so it runs read-only."
        )
    serve_mode = ctx.config.get("crab.permissions") if ctx.config is not None else "ask"
    if serve_mode != "yolo":
        return None  # core's gate asks through the session's channel, or refuses where it cannot
    # crab serve allows everything, but the job's creator had to be asked: refuse rather than
    # run with more than the creator had.
    return crab.hooks.Deny(
        f"Refused: {tool.name} needs {permission} permission; this scheduled job was added by a "
        "session that asks before such calls, so it may not make them unasked."
    )
