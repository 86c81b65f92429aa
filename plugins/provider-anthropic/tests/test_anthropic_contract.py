"""crab-provider-anthropic against ``crab_provider_kit.ProviderContract``: the faults every HTTP
provider handles the same way (error statuses, Retry-After, retries, drops, stalls, a malformed
event, a missing ``message_stop``) and the key in no byte crab printed or stored. What is
Anthropic's own (``overloaded_error``, its overflow bodies) is in test_anthropic_faults.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crab.testing import RecordedRequest
from crab_provider_anthropic.provider import AnthropicProvider
from crab_provider_kit import ProviderContract

_TYPES = {
    "auth": "authentication_error",
    "permission": "permission_error",
    "rate_limit": "rate_limit_error",
    "server": "api_error",
    "not_found": "not_found_error",
    "invalid_request": "invalid_request_error",
}


class TestAnthropicContract(ProviderContract):
    fixtures = Path(__file__).parent / "fixtures"
    key_env = "CRAB_TEST_ANTHROPIC_KEY"
    api_key = "sk-ant-test-4c3b2a1908f7e6d5c4b3a291"
    model = "claude-sonnet-4-5"
    text_cut_after = 4  # after message_start, content_block_start, a ping and the first delta
    tool_stream, tool_cut_after = "tool_use.sse", 8
    missing_end_stream, end_marker = "missing_stop.sse", "message_stop"
    error_before_content_stream = "overloaded_error.sse"
    malformed_event = (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":"x","content_block":{}}\n\n'
    )
    plugin, cli_model, auth_name = "provider-anthropic", "anthropic/claude-sonnet-4-5", "anthropic"

    def make_provider(self, table: dict[str, Any], env: Mapping[str, str]) -> AnthropicProvider:
        return AnthropicProvider(table, env=env)

    def error_body(self, kind: str, message: str) -> Any:
        return {"type": "error", "error": {"type": _TYPES[kind], "message": message}}

    def sent_key(self, request: RecordedRequest) -> str | None:
        assert request.headers["anthropic-version"] == "2023-06-01"
        return request.headers.get("x-api-key")

    def check_round_trip(self, requests: list[RecordedRequest]) -> None:
        # The loop answered both calls and sent the history back as Messages API blocks.
        replayed = requests[1].body["messages"]
        assert [m["role"] for m in replayed] == ["user", "assistant", "user"]
        results = [b["tool_use_id"] for b in replayed[2]["content"] if b["type"] == "tool_result"]
        assert results == ["toolu_01Paris", "toolu_02Tokyo"]
