"""Whether a process a test started still runs: what tests that end processes check (Linux)."""

from __future__ import annotations

from pathlib import Path


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie nobody reaped yet (``Z``) or a dead one (``X``) has ended."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
