"""Test kit for the Anthropic provider: its key, its provider class and its fixture files, served
by ``crab.testing.http_replay.ReplayServer`` (a real HTTP/1.1 server on 127.0.0.1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from crab.testing import ReplayServer, collect_stream, sse_bytes
from crab_provider_anthropic.provider import AnthropicProvider

FIXTURES = Path(__file__).parent / "fixtures"
KEY = "sk-ant-test-4c3b2a1908f7e6d5c4b3a291"
KEY_ENV = "CRAB_TEST_ANTHROPIC_KEY"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads the developer's real ~/.crab or key variables."""
    home = tmp_path / "crab-home"
    monkeypatch.setenv("CRAB_HOME", str(home))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return home


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer(FIXTURES) as replay:
        yield replay


@pytest.fixture
def make_provider(server: ReplayServer) -> Callable[..., AnthropicProvider]:
    """A provider aimed at the replay server with a test key and tiny backoff delays."""

    def make(**overrides: Any) -> AnthropicProvider:
        return AnthropicProvider(server.provider_table(KEY_ENV, **overrides), env={KEY_ENV: KEY})

    return make


@pytest.fixture
def run_stream() -> Callable[..., Any]:
    """``run_stream(provider, request)`` → ``(events, error or None)``."""
    return collect_stream


@pytest.fixture
def api_key() -> str:
    """The fake key every provider in these tests uses; it must never show up in any output."""
    return KEY


@pytest.fixture
def load_fixture() -> Callable[[str], bytes]:
    """A fixture file's SSE bytes, header dropped."""
    return lambda name: sse_bytes(FIXTURES / name)
