"""``ProviderContract`` itself: it names what a subclass forgot, and it fails a provider that leaks
its key. (crab-provider-openai and crab-provider-anthropic show it passing.) The provider here is
the README's toy, so these run with only crab-core and this kit installed.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from crab.testing import ReplayServer
from crab_provider_kit import ProviderContract

KEY = "sk-toy-contract-123456789"


README = Path(__file__).resolve().parents[1] / "README.md"


def readme_plugin() -> types.ModuleType:
    """The README's example provider, a fresh module each time (as test_provider_kit_readme.py)."""
    text = README.read_text()
    start = text.index("```python\n", text.index("## Example")) + len("```python\n")
    module = types.ModuleType("toy_provider_from_readme")
    exec(compile(text[start : text.index("\n```", start)], str(README), "exec"), module.__dict__)
    return module


class Incomplete(ProviderContract):
    key_env = "TOY_API_KEY"


class ToyContract(ProviderContract):
    """Driven by hand below (its name does not start with Test, so pytest does not collect it)."""

    key_env, api_key, model = "TOY_API_KEY", KEY, "toy-1"
    text_stream, text = "text.sse", "hello"
    tool_stream, tool_cut_after = "text.sse", 1
    missing_end_stream, end_marker = "cut.sse", "[DONE]"
    malformed_event, malformed_at = b'data: {"text": 5}\n\n', 1
    plugin, cli_model, auth_name = "toy", "toy/toy-1", "toy"

    def __init__(self, fixtures: Path, leak: bool = False) -> None:
        self.fixtures = fixtures  # type: ignore[misc]
        self.leak = leak

    def make_provider(self, table: dict[str, Any], env: Mapping[str, str]) -> Any:
        plugin = readme_plugin()
        if self.leak:  # a provider that forgets to hand stream_call its key to redact
            call = plugin.HttpCall
            plugin.HttpCall = lambda **fields: call(**{**fields, "secrets": ()})
        return plugin.ToyProvider(table, env=env)

    def error_body(self, kind: str, message: str) -> Any:
        return {"error": {"message": message, "type": kind}}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ReplayServer]:
    (tmp_path / "text.sse").write_text('data: {"text": "hello"}\n\ndata: [DONE]\n\n')
    (tmp_path / "cut.sse").write_text('data: {"text": "hello"}\n\n')
    with ReplayServer(tmp_path) as replay:
        yield replay


def test_a_subclass_missing_attributes_is_told_which() -> None:
    with pytest.raises(TypeError) as info:
        Incomplete().check_subclass()
    message = str(info.value)
    assert message.startswith("Incomplete (a ProviderContract) must set: fixtures, model, tool_stream")
    assert "key_env" not in message


def test_a_provider_whose_401_names_no_key_variable_fails(server: ReplayServer) -> None:
    server.script(server.error(401, {"error": {"message": f"bad key {KEY}"}}))
    with pytest.raises(AssertionError, match="TOY_API_KEY"):
        # The toy's classify quotes the body (the key redacted) but never says what to set.
        ToyContract(server.fixtures or Path()).test_401_names_the_key_variable_and_never_the_key(server)


def test_a_provider_that_leaks_its_key_fails_and_one_that_redacts_it_passes(server: ReplayServer) -> None:
    server.script(server.error(403, {"error": {"message": f"key {KEY} may not use this"}}))
    ToyContract(server.fixtures or Path()).test_403_is_an_auth_error_without_the_key(server)
    server.requests.clear()
    server.script(server.error(403, {"error": {"message": f"key {KEY} may not use this"}}))
    with pytest.raises(AssertionError, match="the API key shows up"):
        ToyContract(server.fixtures or Path(), leak=True).test_403_is_an_auth_error_without_the_key(server)


def test_the_toy_passes_the_stream_faults(server: ReplayServer) -> None:
    contract = ToyContract(server.fixtures or Path())
    for check in (
        contract.test_a_stream_without_its_end_marker_is_an_error,
        contract.test_a_malformed_event_ends_as_an_error_not_a_traceback,
        contract.test_connection_reset_before_the_first_byte_retries,
    ):
        server.requests.clear()
        check(server)
    assert server.requests[-1].body["messages"] == 1
