"""Fixtures for crab-todo's tests, on crab.testing's: the real ``crab`` command on a scripted provider
(``crab_site``: provider ``fake``, model ``script``), and ``crab chat`` in tmux (``crab_screen``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab.testing import ScriptedSite, TmuxScreen

PLUGINS = "fake,todo"
"""The test's provider and crab-todo: nothing else installed is loaded."""


@pytest.fixture
def fake_env(crab_site: ScriptedSite) -> Callable[[list[Any]], dict[str, str]]:
    """``fake_env(replies)``: the environment of a ``crab`` subprocess that loads only the test
    provider and crab-todo, the provider replaying ``replies``."""

    def build(replies: list[Any]) -> dict[str, str]:
        crab_site.script(replies)
        return crab_site.env(PLUGINS)

    return build


@pytest.fixture
def sent_requests(crab_site: ScriptedSite) -> Callable[[], list[list[dict[str, Any]]]]:
    """``sent_requests()``: the messages of every request the provider received, as dicts."""
    return lambda: [request["messages"] for request in crab_site.requests()]


@pytest.fixture
def chat_screen(
    tmp_path: Path, fake_env: Callable[[list[Any]], dict[str, str]], crab_screen: Callable[..., TmuxScreen]
) -> Callable[[list[Any]], TmuxScreen]:
    """``chat_screen(replies)`` starts ``crab chat`` (core's plain prompt) on the test provider in tmux."""

    def start(replies: list[Any]) -> TmuxScreen:
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        command = [sys.executable, "-m", "crab", "chat", "--provider", "fake", "-m", "script"]
        return crab_screen(command, cwd=work, env=fake_env(replies), ready="crab>")

    return start
