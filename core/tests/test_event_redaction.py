"""Every event a renderer or observer gets is redacted, nested, and valid UTF-8 (crab._secrets.redaction)."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Mapping

import pytest
from crab._contracts.events import (
    CommandOutput,
    ErrorEvent,
    FileDiff,
    MessageEnd,
    NoticeEvent,
    PlanEvent,
    PlanItem,
    RetryEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultEvent,
    TurnEnded,
    TurnStarted,
    UsageEvent,
)
from crab._contracts.messages import AssistantMessage, Thinking, ToolCall, Usage
from crab._host.hookspecs import hookimpl
from crab._secrets.redaction import EventRedactor, Redactor, StreamRedactor
from crab._values.event_json import event_to_dict
from crab._values.utf8 import json_text, valid_text
from hypothesis import given, settings
from hypothesis import strategies as st

KEY = "sk-test-0123456789abcdef"


def _one(redactor: EventRedactor, event):
    shown = redactor.events(event, "s")
    assert len(shown) == 1
    return shown[0]


EVERY_KIND = [
    TurnStarted("s", "t", f"use {KEY}"),
    ToolCallEvent(ToolCall("c1", "bash", {"command": f"echo {KEY}", KEY: [f"x{KEY}", {"n": KEY}]}, KEY, KEY)),
    ToolResultEvent("c1", "bash", f"out {KEY}"),
    ToolResultEvent("c2", "edit", "ok", diffs=(FileDiff("a.py", f"-x\n+{KEY}", "x", KEY, 1, 1),)),
    PlanEvent("s", (PlanItem(f"rotate {KEY}", "in_progress"),)),
    RetryEvent(2, 3, 1.0, f"status 500: {KEY}"),
    ErrorEvent(f"bad key {KEY}"),
    NoticeEvent(f"note {KEY}"),
    CommandOutput("!", f"env: {KEY}"),
    TurnEnded("s", "t", "end", f"answer {KEY}", Usage(1, 2), f"err {KEY}"),
    MessageEnd(
        AssistantMessage(
            content=KEY,
            thinking=(Thinking(KEY, signature="sig"),),
            tool_calls=(ToolCall("c", "read", {"path": KEY}),),
            error=KEY,
        )
    ),
    UsageEvent(Usage(3, 4, cost=0.5)),
]


@pytest.mark.parametrize("event", EVERY_KIND, ids=lambda e: e.type)
def test_every_string_in_every_event_kind_is_masked(event):
    shown = _one(EventRedactor(Redactor([KEY])), event)
    assert type(shown) is type(event)
    assert KEY not in json.dumps(event_to_dict(shown))
    if event.type != "usage":
        assert "[redacted]" in json.dumps(event_to_dict(shown))


def test_events_without_secrets_pass_unchanged_and_uncopied():
    redactor = EventRedactor(Redactor([KEY]))
    for event in (ToolCallEvent(ToolCall("c", "ls", {"path": "."})), UsageEvent(Usage(1, 1)), NoticeEvent("hi")):
        assert _one(redactor, event) is event


def test_lone_surrogates_become_replacement_characters():
    shown = _one(EventRedactor(Redactor([])), ToolCallEvent(ToolCall("c", "read", {"path": "x\udcff.txt"})))
    assert shown.call.arguments == {"path": "x\ufffd.txt"}
    json_text(event_to_dict(shown)).encode("utf-8")  # strict: raises if anything is left


def _reference(redactor: Redactor, value):
    """The walk by definition: every string (keys as ``str(key)``) masked and made valid UTF-8,
    containers and dataclasses rebuilt around them, everything else as it is."""
    if isinstance(value, str):
        return valid_text(redactor.text(value))
    if isinstance(value, Mapping):
        return {_reference(redactor, str(k)): _reference(redactor, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_reference(redactor, v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _reference(redactor, getattr(value, f.name)) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **fields)
    return value


class _Str(str):
    pass


class _Dict(dict):
    pass


_PIECES = ["", "a", "é", "\udcff", KEY, KEY[:7], KEY[3:], "sk-", " ", "0123"]
_texts = st.lists(st.sampled_from(_PIECES), max_size=6).map("".join)
_leaves = _texts | _texts.map(_Str) | st.integers() | st.none() | st.booleans() | st.floats(allow_nan=False)
_values = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(_texts | st.integers(), inner, max_size=4)
        | st.dictionaries(_texts, inner, max_size=3).map(_Dict)
        | st.builds(ToolCall, _texts, _texts, st.dictionaries(_texts, inner, max_size=3))
        | st.builds(ToolResultEvent, _texts, _texts, _texts, st.booleans())
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(value=_values, secrets=st.sampled_from([[KEY], [KEY, "0123456789"], []]))
def test_the_fast_walk_masks_exactly_as_the_definition(value, secrets):
    """``EventRedactor._value`` tells types apart by one lookup and skips strings too short to hold
    a secret: it must give what the plain definition gives, for every shape and subclass, and
    return the object itself whenever nothing in it changed."""
    redactor = Redactor(secrets)
    shown = EventRedactor(redactor)._value(value)
    expected = _reference(redactor, value)
    assert shown == expected
    assert type(shown) is type(expected) or isinstance(value, _Dict | _Str)
    plain = not any(isinstance(part, _Dict | _Str) for part in _parts(value))
    same_types = all(type(a) is type(b) for a, b in zip(_parts(expected), _parts(value), strict=False))
    if plain and expected == value and same_types:
        assert shown is value
    for text in _strings(shown):
        assert not any(secret in text for secret in redactor.secrets)
        text.encode("utf-8")


def _parts(value):
    """``value`` and everything in it, depth first."""
    yield value
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _parts(k)
            yield from _parts(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _parts(v)
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _parts(getattr(value, f.name))


def _strings(value):
    return (part for part in _parts(value) if isinstance(part, str))


def test_a_key_split_across_text_deltas_is_masked():
    redactor = EventRedactor(Redactor([KEY]))
    pieces = ["Your key is sk-te", "st-0123", "456789abcdef, keep it", " safe."]
    shown = [e for p in pieces for e in redactor.events(TextDelta(p), "s")]
    shown += redactor.events(TurnEnded("s", "t", "end"), "s")
    text = "".join(e.text for e in shown if isinstance(e, TextDelta))
    assert text == "Your key is [redacted], keep it safe."
    assert all(KEY[:4] not in e.text for e in shown if isinstance(e, TextDelta))


def test_a_held_tail_is_flushed_before_the_next_other_event():
    redactor = EventRedactor(Redactor([KEY]))
    assert [e.text for e in redactor.events(TextDelta("costs sk-"), "s")] == ["costs "]
    thinking = redactor.events(ThinkingDelta("hmm"), "s")
    assert [(type(e), e.text) for e in thinking] == [(TextDelta, "sk-"), (ThinkingDelta, "hmm")]
    call = ToolCallEvent(ToolCall("c", "ls", {}))
    assert redactor.events(call, "s") == [call]


def test_streams_of_different_sessions_do_not_mix():
    redactor = EventRedactor(Redactor([KEY]))
    assert [e.text for e in redactor.events(TextDelta("a sk-test"), "one")] == ["a "]
    assert [e.text for e in redactor.events(TextDelta("-0123456789abcdef"), "two")] == ["-0123456789abcdef"]
    rest = redactor.events(TextDelta("-0123456789abcdef!"), "one")
    assert [e.text for e in rest] == ["[redacted]!"]


def test_a_split_key_in_thinking_is_masked_too():
    redactor = EventRedactor(Redactor([KEY]))
    shown = [e for p in (KEY[:5], KEY[5:12], KEY[12:] + " end") for e in redactor.events(ThinkingDelta(p), "s")]
    shown += redactor.events(TurnEnded("s", "t", "end"), "s")
    assert "".join(e.text for e in shown if isinstance(e, ThinkingDelta)) == "[redacted] end"


def test_stream_redaction_equals_whole_text_redaction_for_any_split():
    rnd = random.Random(7)
    for _ in range(2000):
        secrets = ["".join(rnd.choice("abX") for _ in range(rnd.randint(8, 11))) for _ in range(rnd.randint(1, 4))]
        redactor = Redactor(secrets)
        text = "".join(rnd.choice([rnd.choice("abX"), rnd.choice(secrets)]) for _ in range(rnd.randint(0, 25)))
        cuts = sorted(rnd.sample(range(len(text) + 1), min(len(text) + 1, rnd.randint(0, 8))))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        stream = StreamRedactor(redactor)
        assert "".join(stream.feed(p) for p in pieces) + stream.flush() == redactor.text(text), (secrets, pieces)


def test_without_secrets_nothing_is_held_back():
    stream = StreamRedactor(Redactor([]))
    assert stream.feed("sk-") == "sk-" and stream.flush() == ""


class _Observer:
    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def crab_event(self, event, session_id):
        self.seen.append(json.dumps(event_to_dict(event)))


def test_the_agent_delivers_only_redacted_events_to_listeners_and_observers(crab_agent, monkeypatch):
    monkeypatch.setenv("EXAMPLE_API_KEY", KEY)
    observer = _Observer()
    h = crab_agent(
        [
            [{"text": "The key is sk-test-01"}, {"text": "23456789abcdef."}, {"tool": "echo", "args": {"v": KEY}}],
            [{"thinking": f"k={KEY}"}, {"text": "done"}],
        ],
        plugins={"observer": observer},
    )
    outcome = h.run(f"here is {KEY}")
    assert outcome.stop == "end"
    listened = [json.dumps(event_to_dict(e)) for e in h.events]
    for seen in (listened, observer.seen):
        assert seen and not any(KEY in line or "01234567" in line for line in seen), seen
    text = "".join(e.text for e in h.events_of(TextDelta))
    assert text.startswith("The key is [redacted].")


def test_the_cli_error_line_is_masked(crab_home, monkeypatch):
    from crab._secrets.redaction import error_line

    monkeypatch.setenv("SOME_SERVICE_TOKEN", KEY)
    assert (
        error_line(f"crab: the server said {KEY} is wrong \udcff") == "crab: the server said [redacted] is wrong \ufffd"
    )
