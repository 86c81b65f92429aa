"""``crab.messages.messages_from_json`` reads a conversation a program got from
elsewhere (a file, a request body), so text nested deeper than Python's recursion limit is a
``crab.UsageError`` saying so, as every other bad input there is (docs/library.md#history-as-data),
never a ``RecursionError``."""

from __future__ import annotations

import crab
import pytest

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "text",
    [DEEP, '[{"v": 1, "role": "user", "content": ' + DEEP + "}]"],
    ids=["array", "inside-a-message"],
)
def test_messages_nested_too_deep_are_a_usage_error(text: str):
    with pytest.raises(crab.UsageError, match="nested too deep"):
        crab.messages.messages_from_json(text)
