"""Test kit for the OpenAI provider: its key, its provider class and its fixture files, served
by ``crab.testing.http_replay.ReplayServer`` (a real HTTP/1.1 server on 127.0.0.1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from crab.testing import ReplayServer, collect_stream, sse_bytes
from crab_provider_openai.provider import OpenAIProvider

FIXTURES = Path(__file__).parent / "fixtures"
KEY = "sk-test-9f8e7d6c5b4a39281706f5e4"
KEY_ENV = "CRAB_TEST_OPENAI_KEY"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads the developer's real ~/.crab or key variables."""
    home = tmp_path / "crab-home"
    monkeypatch.setenv("CRAB_HOME", str(home))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return home


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer(FIXTURES) as replay:
        yield replay


@pytest.fixture
def make_provider(server: ReplayServer) -> Callable[..., OpenAIProvider]:
    """A provider aimed at the replay server with a test key and tiny backoff delays."""

    def make(**overrides: Any) -> OpenAIProvider:
        return OpenAIProvider(server.provider_table(KEY_ENV, **overrides), env={KEY_ENV: KEY})

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
