"""Fixtures for crab-render-rich's tests: crab.testing's ``ScriptedSite`` with the test plugin
``rrfake`` beside its provider, and ``crab chat`` on it in crab.testing's tmux screen."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab.testing import ScriptedSite, TmuxScreen

HERE = Path(__file__).parent
FAKE = "render_rich_fakes"
MODELS = (
    {"id": "script", "context_window": 200_000, "input_price": 1.0, "output_price": 2.0},
    {"id": "script-b", "context_window": 50_000, "input_price": 3.0, "output_price": 6.0},
)
"""The provider ``fake``'s models, priced apart (``/model`` and the status line show the switch)."""


@pytest.fixture
def site(tmp_path: Path) -> ScriptedSite:
    """Provider ``fake`` (models ``script`` and ``script-b``) and the test plugin ``rrfake``."""
    made = ScriptedSite(tmp_path, models=MODELS)
    made.add_plugin("rrfake", FAKE, (HERE / f"{FAKE}.py").read_text(encoding="utf-8"))
    return made


@pytest.fixture
def fake_env(tmp_path: Path, site: ScriptedSite) -> Callable[[list[Any]], dict[str, str]]:
    """``fake_env(replies)``: the environment for a ``crab`` subprocess that sees only the test
    plugins and this one, with the fake provider replaying ``replies``."""

    def build(replies: list[Any]) -> dict[str, str]:
        site.script(replies)
        return site.env("fake,rrfake,render-rich", extra={"RENDER_RICH_STORE": str(tmp_path / "store.json")})

    return build


@pytest.fixture
def chat_screen(
    tmp_path: Path, fake_env: Callable[[list[Any]], dict[str, str]], crab_screen: Callable[..., TmuxScreen]
) -> Callable[..., TmuxScreen]:
    """``chat_screen(replies, *args)`` starts ``crab chat`` on the fake provider inside tmux and
    waits for ``ready`` (the prompt; the ``-r`` picker's question shows before it)."""

    def start(replies: list[Any], *args: str, env: dict[str, str] | None = None, ready: str = "❯") -> TmuxScreen:
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        command = [sys.executable, "-m", "crab", "chat", "--provider", "fake", "-m", "script", *args]
        return crab_screen(
            command, cwd=work, env={**fake_env(replies), "TERM": "xterm-256color", **(env or {})}, ready=ready
        )

    return start


@pytest.fixture
def sent_requests(site: ScriptedSite) -> Callable[[], list[list[dict[str, Any]]]]:
    """``sent_requests()``: every request the fake provider received, its messages as dicts."""
    return lambda: [request["messages"] for request in site.requests()]


@pytest.fixture
def models_asked(site: ScriptedSite) -> Callable[[], list[str]]:
    """``models_asked()``: the model of every request the fake provider received, in order."""
    return lambda: [request["model"] for request in site.requests()]
