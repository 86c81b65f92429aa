"""Fixtures for crab-todo's tests: the real ``crab`` command on a scripted provider (a test plugin
in a site folder)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
FAKE = "todo_fakes"


def make_site(root: Path) -> Path:
    """A folder that, on PYTHONPATH, makes the test plugin look pip-installed (entry point ``todofake``)."""
    site = root / "site"
    site.mkdir(exist_ok=True)
    shutil.copy(HERE / f"{FAKE}.py", site / f"{FAKE}.py")
    dist = site / "todo_fakes-0.0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: todo-fakes\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text(f"[crab]\ntodofake = {FAKE}\n")
    return site


@pytest.fixture
def fake_env(tmp_path: Path) -> Callable[[list[Any]], dict[str, str]]:
    """``fake_env(replies)``: the environment of a ``crab`` subprocess that loads only the test
    plugin and crab-todo, with the fake provider replaying ``replies``."""

    def build(replies: list[Any]) -> dict[str, str]:
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"replies": replies}))
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "TMUX"))}
        environment.update(
            PYTHONPATH=str(make_site(tmp_path)),
            CRAB_HOME=str(tmp_path / "home"),
            CRAB_PLUGINS="todofake,todo",
            TODO_REQUESTS=str(tmp_path / "requests.jsonl"),
            TODO_SCRIPT=str(script),
        )
        return environment

    return build


@pytest.fixture
def sent_requests(tmp_path: Path) -> Callable[[], list[list[dict[str, Any]]]]:
    """``sent_requests()``: every request the fake provider received, its messages as dicts."""

    def read() -> list[list[dict[str, Any]]]:
        path = tmp_path / "requests.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    return read
