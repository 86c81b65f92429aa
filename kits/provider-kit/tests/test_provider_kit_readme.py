"""The README's example provider works as written: streamed, retried, its key redacted."""

from __future__ import annotations

import types
from pathlib import Path

import crab
import pytest
from crab.testing import ReplayServer, collect_stream

README = Path(__file__).resolve().parents[1] / "README.md"
KEY = "sk-toy-secret-123456"


def readme_plugin() -> types.ModuleType:
    text = README.read_text()
    start = text.index("```python\n", text.index("## Example")) + len("```python\n")
    module = types.ModuleType("toy_provider_from_readme")
    exec(compile(text[start : text.index("\n```", start)], str(README), "exec"), module.__dict__)
    return module


@pytest.fixture
def server(tmp_path: Path):
    (tmp_path / "text.sse").write_text('data: {"text": "hello "}\n\ndata: {"text": "world"}\n\ndata: [DONE]\n\n')
    with ReplayServer(tmp_path) as replay:
        yield replay


def request() -> crab.ModelRequest:
    return crab.ModelRequest(model="toy-1", system="", messages=(crab.messages.UserMessage("hi"),))


def test_the_readme_provider_streams_and_retries(server):
    plugin = readme_plugin()
    server.script(server.error(429, {"error": {"message": "slow down"}}), server.sse("text.sse"))
    provider = plugin.ToyProvider(server.provider_table("TOY_API_KEY"), env={"TOY_API_KEY": KEY})
    events, error = collect_stream(provider, request())
    assert error is None, error
    assert "".join(e.text for e in events if isinstance(e, crab.events.TextDelta)) == "hello world"
    assert isinstance(events[-1], crab.events.MessageEnd) and events[-1].message.content == "hello world"
    assert len(server.requests) == 2
    assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_the_readme_provider_redacts_its_key(server):
    plugin = readme_plugin()
    server.script(server.error(401, {"error": {"message": f"bad key {KEY}"}}))
    provider = plugin.ToyProvider(server.provider_table("TOY_API_KEY"), env={"TOY_API_KEY": KEY})
    _events, error = collect_stream(provider, request())
    assert isinstance(error, crab.ProviderError), error
    assert "HTTP 401" in str(error) and KEY not in str(error)


def test_the_readme_plugin_runs_a_turn(server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TOY_API_KEY", KEY)
    server.script(server.sse("text.sse"))
    table = server.provider_table("TOY_API_KEY")
    settings = {f"plugins.toy.{key}": value for key, value in table.items()}
    with crab.Agent(
        "toy/toy-1",
        plugins=[],
        plugin_objects={"toy": readme_plugin()},
        settings=settings,
        user_config=False,
        project_config=False,
        workspace=tmp_path,
    ) as agent:
        result = agent.run_sync("hi")
    assert result.ok and result.text == "hello world", result.error
