"""crab-provider-openai against ``crab_provider_kit.ProviderContract``: the faults every HTTP provider
handles the same way (error statuses, Retry-After, retries, drops, stalls, a malformed chunk, a
missing ``[DONE]``) and the key in no byte crab printed or stored. What is OpenAI's own (its
overflow and quota bodies) is in test_openai_faults.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crab.testing import RecordedRequest
from crab_provider_kit import ProviderContract
from crab_provider_openai.provider import OpenAIProvider

_CODES = {
    "auth": "invalid_api_key",
    "permission": "insufficient_permissions",
    "rate_limit": "rate_limit_exceeded",
    "server": "server_error",
    "not_found": "model_not_found",
    "invalid_request": "invalid_request_error",
}


class TestOpenAIContract(ProviderContract):
    fixtures = Path(__file__).parent / "fixtures"
    key_env = "CRAB_TEST_OPENAI_KEY"
    api_key = "sk-test-9f8e7d6c5b4a39281706f5e4"
    model = "gpt-4.1-mini"
    tool_stream, tool_cut_after = "parallel_tools.sse", 5
    missing_end_stream, end_marker = "missing_done.sse", "[DONE]"
    error_before_content_stream = "midstream_error.sse"
    malformed_event = b'data: {"choices": "not a list"}\n\n'
    plugin, cli_model, auth_name = "provider-openai", "openai/gpt-4.1-mini", "openai"

    def make_provider(self, table: dict[str, Any], env: Mapping[str, str]) -> OpenAIProvider:
        return OpenAIProvider(table, env=env)

    def error_body(self, kind: str, message: str) -> Any:
        return {"error": {"message": message, "type": "requests", "code": _CODES[kind]}}

    def check_round_trip(self, requests: list[RecordedRequest]) -> None:
        # The loop answered both calls and sent the history back in chat-completions shape.
        replayed = requests[1].body["messages"]
        assert [m["role"] for m in replayed][-3:] == ["assistant", "tool", "tool"]
        assert [m["tool_call_id"] for m in replayed[-2:]] == ["call_weather_paris", "call_weather_tokyo"]
