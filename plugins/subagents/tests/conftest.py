"""Helpers for crab-subagents' tests: writing agent files."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# Tests import their fakes (subagents_fakes.py) by name; pytest's importlib mode puts no test
# folder on the path, so this one is put there.
sys.path.insert(0, str(Path(__file__).parent))


def _write_agent(folder: Path, name: str, front: str, body: str = "") -> Path:
    path = folder / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front.strip()}\n---\n{body}", encoding="utf-8")
    return path


@pytest.fixture
def write_agent() -> Callable[..., Path]:
    """``write_agent(folder, name, front, body="")`` writes ``folder/name.md`` and returns its path."""
    return _write_agent
