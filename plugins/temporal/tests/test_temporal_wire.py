"""What a reply carries into Temporal's history (``crab_temporal.wire``): masked before it is cut."""

from __future__ import annotations

import crab
from crab_temporal.wire import REPLY_TEXT_CAP, reply_to_wire

SECRET = "sk-live-0123456789abcdef0123456789"


def mask(text: str) -> str:
    return text.replace(SECRET, "[redacted]")


def test_a_secret_across_the_cut_is_masked_not_halved():
    # The secret starts 10 characters before the cap: cut first, its first 10 characters were no
    # longer the known secret and stayed in the history as they were.
    text = "a" * (REPLY_TEXT_CAP - 10) + SECRET + " and more"
    wired = reply_to_wire(crab.messages.AssistantMessage(text), redact=mask)
    assert SECRET[:10] not in wired["content"]
    assert wired["content"] == "a" * (REPLY_TEXT_CAP - 10) + "[redacted]"


def test_a_long_reply_is_still_cut_at_the_cap():
    wired = reply_to_wire(crab.messages.AssistantMessage("b" * (REPLY_TEXT_CAP * 2)), redact=mask)
    assert wired["content"] == "b" * REPLY_TEXT_CAP
