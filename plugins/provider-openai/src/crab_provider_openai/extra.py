"""The chat-completions body's ``extra_body`` rules (``crab_provider_kit.ExtraBody``)."""

from __future__ import annotations

from crab_provider_kit import ExtraBody

EXTRA_BODY = ExtraBody(
    reserved=("model", "messages", "stream", "stream_options", "tools"),  # include_usage sets stream_options
    tool_fields=("tool_choice", "parallel_tool_calls"),
)
