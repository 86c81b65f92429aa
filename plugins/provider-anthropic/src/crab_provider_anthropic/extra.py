"""The Messages API body's ``extra_body`` rules (``crab_provider_kit.ExtraBody``)."""

from __future__ import annotations

from crab_provider_kit import ExtraBody

EXTRA_BODY = ExtraBody(reserved=("model", "messages", "stream", "system", "tools"), tool_fields=("tool_choice",))
