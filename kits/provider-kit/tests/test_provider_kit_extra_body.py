"""``crab_provider_kit.ExtraBody``: what a provider's ``extra_body`` may hold and how it is merged."""

from __future__ import annotations

import math

import pytest
from crab import InvalidValue
from crab_provider_kit import ExtraBody, merge_tables, unique_id

RULES = ExtraBody(reserved=("model", "messages", "stream"), tool_fields=("tool_choice",))
KEY = ("plugins", "provider-x", "extra_body")


def test_a_reserved_field_is_one_line_naming_the_key():
    with pytest.raises(InvalidValue) as info:
        RULES.read({"messages": []}, KEY)
    assert str(info.value) == (
        "config: plugins.provider-x.extra_body.messages: expected a field other than model, messages, stream "
        "(crab builds those itself), found []"
    )


@pytest.mark.parametrize("bad", [math.inf, {"deep": [1, math.nan]}])
def test_values_json_cannot_carry_are_refused_before_any_request(bad):
    with pytest.raises(InvalidValue, match="expected a finite number"):
        RULES.read({"top_k": bad}, KEY)


def test_model_entries_lose_their_extra_body_to_the_checked_table():
    rest, extra = RULES.split_model_entry({"context_window": 8, "extra_body": {"top_k": 1}}, ("models", "m"))
    assert rest == {"context_window": 8}
    assert extra == {"top_k": 1}


def test_tool_fields_stay_out_of_a_request_without_tools():
    extra = {"tool_choice": "required", "top_k": 1}
    assert RULES.for_request(extra, has_tools=False) == {"top_k": 1}
    assert RULES.for_request(extra, has_tools=True) == extra


@pytest.mark.parametrize(
    ("choice", "forced"),
    [
        ({"type": "function", "function": {"name": "read"}}, {"read"}),  # chat completions
        ({"type": "tool", "name": "read"}, {"read"}),  # Anthropic messages
        ("required", {"read", "grep"}),
        ({"type": "any"}, {"read", "grep"}),
        ("auto", set()),
        ({"type": "none"}, set()),
        ({"type": "tool", "name": "gone"}, set()),
        (None, set()),
    ],
)
def test_forced_tools_are_those_a_tool_choice_makes_the_model_call(choice, forced):
    extra = {} if choice is None else {"tool_choice": choice}
    assert RULES.forced_tools(extra, ["read", "grep"]) == forced
    assert RULES.forced_tools(extra, []) == set()
    assert ExtraBody(reserved=()).forced_tools(extra, ["read"]) == set()  # no tool_choice in its wire format


def test_merge_lays_tables_key_by_key_and_replaces_the_rest():
    base = {"options": {"a": 1, "b": 2}, "top_k": 5}
    assert merge_tables(base, {"options": {"b": 3}, "top_k": 1}) == {"options": {"a": 1, "b": 3}, "top_k": 1}


def test_unique_id_suffixes_repeats_within_one_reply():
    taken: set[str] = set()
    assert [unique_id("call_0", taken) for _ in range(3)] == ["call_0", "call_0_2", "call_0_3"]
