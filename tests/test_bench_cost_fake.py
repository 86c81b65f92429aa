"""The cost benchmark's fake providers bill by the published prompt-cache rules
(``bench/_cost/billing.py``): hand-built request sequences with and without markers, checked
against what Anthropic's and OpenAI's prompt-caching guides say each request costs."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _load(name: str) -> ModuleType:
    """``bench/_cost/NAME.py`` (bench/ is no package and stays off ``sys.path``)."""
    if "_cost" not in sys.modules:
        folder = BENCH / "_cost"
        spec = importlib.util.spec_from_file_location(
            "_cost", folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        assert spec is not None
        assert spec.loader is not None
        sys.modules["_cost"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["_cost"])
    return importlib.import_module(f"_cost.{name}")


billing = _load("billing")
MARK = {"type": "ephemeral"}


def tool(name: str, words: int, mark: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "description": "word " * words, "input_schema": {"type": "object"}}
    if mark:
        out["cache_control"] = mark
    return out


def text(words: int, mark: dict[str, Any] | None = None, word: str = "w") -> dict[str, Any]:
    out: dict[str, Any] = {"type": "text", "text": f"{word} " * words}
    if mark:
        out["cache_control"] = mark
    return out


def body(tools: list[dict[str, Any]], turns: list[list[dict[str, Any]]], system: Any = "") -> dict[str, Any]:
    roles = ["user", "assistant"]
    messages = [{"role": roles[i % 2], "content": blocks} for i, blocks in enumerate(turns)]
    return {"model": "claude-sonnet-4-5", "system": system, "tools": tools, "messages": messages}


def total(request: dict[str, Any]) -> int:
    return sum(b.tokens for b in billing.anthropic_blocks(request))


def prefix(request: dict[str, Any], blocks: int) -> int:
    return sum(b.tokens for b in billing.anthropic_blocks(request)[:blocks])


@pytest.fixture
def clock() -> Any:
    return billing.FakeClock()


def test_tokens_count_words_punctuation_and_one_per_pair() -> None:
    assert billing.tokens({"a": "b c."}) == 5  # a : b c .
    assert billing.tokens({"n": 3, "ok": True, "x": None}) == 9
    assert billing.tokens(["one two", "three"]) == 3


def test_without_markers_nothing_is_cached(clock: Any) -> None:
    cache = billing.AnthropicCache(clock)
    request = body([tool("a", 3000)], [[text(10)]])
    for _ in range(3):
        bill = cache.bill(request)
        assert (bill.uncached, bill.read, bill.written) == (total(request), 0, 0)
        assert bill.billed == total(request)


def test_a_breakpoint_writes_its_prefix_then_the_next_request_reads_it(clock: Any) -> None:
    cache = billing.AnthropicCache(clock)
    first = body([tool("a", 1500, MARK)], [[text(10)]])
    cached = prefix(first, 1)
    bill = cache.bill(first)
    assert (bill.written_5m, bill.read, bill.uncached) == (cached, 0, total(first) - cached)
    assert bill.billed == pytest.approx(cached * 1.25 + total(first) - cached)
    clock.advance(10)
    second = body([tool("a", 1500, MARK)], [[text(10)], [text(5)], [text(7)]])
    bill = cache.bill(second)
    assert (bill.read, bill.written, bill.uncached) == (cached, 0, total(second) - cached)
    assert bill.billed == pytest.approx(cached * 0.1 + total(second) - cached)


def test_a_prefix_under_1024_tokens_is_not_cached(clock: Any) -> None:
    cache = billing.AnthropicCache(clock)
    small = body([tool("a", 900, MARK)], [[text(10)]])
    assert prefix(small, 1) < 1024
    for _ in range(2):
        bill = cache.bill(small)
        assert (bill.read, bill.written) == (0, 0)


def test_five_breakpoints_are_a_400_like_the_real_api(clock: Any) -> None:
    cache = billing.AnthropicCache(clock)
    request = body([tool(n, 10, MARK) for n in "abcde"], [[text(10)]])
    with pytest.raises(
        billing.RejectedRequest, match=r"A maximum of 4 blocks with cache_control may be provided\. Found 5\."
    ):
        cache.bill(request)
    assert cache.bill(body([tool(n, 10, MARK) for n in "abcd"], [[text(10)]])).prompt > 0


def test_no_marker_on_thinking_and_no_1h_after_5m(clock: Any) -> None:
    cache = billing.AnthropicCache(clock)
    thinking = {"type": "thinking", "thinking": "hm", "signature": "s", "cache_control": MARK}
    with pytest.raises(billing.RejectedRequest, match="thinking"):
        cache.bill(body([tool("a", 10)], [[text(5)], [thinking, text(3)], [text(2)]]))
    with pytest.raises(billing.RejectedRequest, match="1h"):
        cache.bill(body([tool("a", 10, MARK)], [[text(5, {"type": "ephemeral", "ttl": "1h"})]]))


def test_five_minutes_ttl_refreshed_by_each_hit(clock: Any) -> None:
    cache = billing.AnthropicCache(clock)
    request = body([tool("a", 2000, MARK)], [[text(10)]])
    assert cache.bill(request).written > 0
    for _ in range(3):  # each hit within 5 minutes keeps it alive for 5 more
        clock.advance(290)
        assert cache.bill(request).read == prefix(request, 1)
    clock.advance(301)  # a 5-minute pause with no request: gone, written again
    bill = cache.bill(request)
    assert (bill.read, bill.written_5m) == (0, prefix(request, 1))


def test_one_hour_ttl_survives_a_long_pause_and_writes_at_twice_the_price(clock: Any) -> None:
    cache = billing.AnthropicCache(clock)
    request = body([tool("a", 2000, {"type": "ephemeral", "ttl": "1h"})], [[text(10)]])
    bill = cache.bill(request)
    assert (bill.written_1h, bill.written_5m) == (prefix(request, 1), 0)
    assert bill.billed == pytest.approx(prefix(request, 1) * 2.0 + bill.uncached)
    clock.advance(360)
    assert cache.bill(request).read == prefix(request, 1)


def _rolling(turns: int) -> dict[str, Any]:
    """A conversation of ``turns`` single-block messages, the marker on the last one."""
    blocks = [[text(60, word=f"t{i}")] for i in range(turns)]
    blocks[-1] = [text(60, MARK, word=f"t{turns - 1}")]
    return body([tool("a", 200)], blocks, system="be brief")


def test_a_hit_is_found_up_to_20_blocks_before_the_breakpoint(clock: Any) -> None:
    cache = billing.AnthropicCache(clock)
    first = _rolling(20)
    written = cache.bill(first).written
    assert written == total(first)
    clock.advance(5)
    near = _rolling(40)  # its breakpoint is 20 blocks after the cached one: found
    bill = cache.bill(near)
    assert bill.read == total(first)
    assert bill.written == total(near) - total(first)

    fresh = billing.AnthropicCache(clock)
    fresh.bill(first)
    far = _rolling(41)  # 21 blocks after: the lookback misses it, everything is written again
    bill = fresh.bill(far)
    assert (bill.read, bill.written) == (0, total(far))


def test_the_longest_cached_prefix_wins_and_a_changed_tool_misses_everything(clock: Any) -> None:
    cache = billing.AnthropicCache(clock)
    tools = [tool("a", 1100, MARK)]
    first = body(tools, [[text(50, MARK)]], system=[text(30, MARK)])
    assert cache.bill(first).written == total(first)
    second = body(tools, [[text(50)], [text(40)], [text(30, MARK)]], system=[text(30, MARK)])
    bill = cache.bill(second)
    assert bill.read == total(first)  # the message breakpoint's prefix, not the tools' shorter one
    assert bill.written == total(second) - total(first)
    changed = body([tool("a", 1101, MARK)], [[text(50)], [text(40)], [text(30, MARK)]], system=[text(30, MARK)])
    bill = cache.bill(changed)
    assert (bill.read, bill.written) == (0, total(changed))


def test_moving_a_marker_does_not_change_the_prefix(clock: Any) -> None:
    cache = billing.AnthropicCache(clock)
    first = body([tool("a", 1100)], [[text(50, MARK)]])
    cache.bill(first)
    second = body([tool("a", 1100)], [[text(50)], [text(10)], [text(10, MARK)]])
    assert cache.bill(second).read == total(first)


def openai_body(words: int, key: str | None = None, extra: int = 0) -> dict[str, Any]:
    messages = [{"role": "system", "content": "s " * words}, {"role": "user", "content": "u " * 10}]
    if extra:
        messages += [{"role": "assistant", "content": "a " * extra}, {"role": "user", "content": "more"}]
    out: dict[str, Any] = {"model": "gpt-4.1", "messages": messages}
    if key:
        out["prompt_cache_key"] = key
    return out


def test_openai_caches_prompts_of_1024_tokens_in_128_token_steps(clock: Any) -> None:
    cache = billing.OpenAICache(clock)
    small = openai_body(900)
    assert len(billing.openai_words(small)) < 1024
    assert cache.bill(small).read == 0 and cache.bill(small).read == 0
    request = openai_body(1500)
    length = len(billing.openai_words(request))
    assert cache.bill(request).read == 0
    bill = cache.bill(request)
    assert bill.read == 1024 + (length - 1024) // 128 * 128
    assert bill.billed == pytest.approx(bill.read * 0.5 + bill.uncached)
    longer = openai_body(1500, extra=400)  # the first prompt whole, then more messages
    assert billing.openai_words(longer)[:length] == billing.openai_words(request)
    assert cache.bill(longer).read == 1024 + (length - 1024) // 128 * 128
    assert cache.bill(longer).read == 1024 + (len(billing.openai_words(longer)) - 1024) // 128 * 128


def test_openai_cache_is_per_key_and_expires_after_five_idle_minutes(clock: Any) -> None:
    cache = billing.OpenAICache(clock)
    cache.bill(openai_body(1500, key="one"))
    assert cache.bill(openai_body(1500, key="two")).read == 0
    assert cache.bill(openai_body(1500, key="one")).read > 0
    clock.advance(301)
    assert cache.bill(openai_body(1500, key="one")).read == 0


script = _load("script")
server = _load("server")
FIND, FIX_IT = script.SHORT[0], script.SHORT[1]


def anthropic_request(*turns: list[dict[str, Any]], system: Any = "crab's prompt") -> dict[str, Any]:
    roles = ["user", "assistant"]
    messages = [{"role": roles[i % 2], "content": blocks} for i, blocks in enumerate(turns)]
    return {"model": "claude-sonnet-4-5", "system": system, "messages": messages, "stream": True}


def test_the_script_places_each_request_from_its_content_alone() -> None:
    short = script.Script(script.SHORT)
    prompt = [{"type": "text", "text": FIND.text}]
    assert server.place_anthropic(anthropic_request(prompt), short) == 0
    call = [{"type": "tool_use", "id": "toolu_bench_004_0", "name": "read", "input": {}}]
    result = [{"type": "tool_result", "tool_use_id": "toolu_bench_004_0", "content": "…"}]
    assert server.place_anthropic(anthropic_request(prompt, call, result), short) == 5
    # A new process (crab run -c) sends the whole history, the next prompt last.
    answered = [{"type": "text", "text": "the cause"}]
    second = anthropic_request(prompt, call, result, answered, [{"type": "text", "text": FIX_IT.text}])
    assert server.place_anthropic(second, short) == len(FIND.steps)
    # A note after the results (a later day, a reminder) does not hide the last result.
    noted = anthropic_request(prompt, call, [*result, {"type": "text", "text": "[crab] note: it is Monday"}])
    assert server.place_anthropic(noted, short) == 5
    assert server.place_anthropic(anthropic_request([{"type": "text", "text": "hello"}]), short) is None


def test_summary_requests_are_recognised_in_both_shapes() -> None:
    short = script.Script(script.SHORT)
    transcript = [
        {"type": "text", "text": f"Conversation to summarise:\n\n[user]\n{FIND.text}\n\nWrite the summary now."}
    ]
    assert (
        server.place_anthropic(anthropic_request(transcript, system="You summarise a conversation"), short) == "summary"
    )
    in_place = {"type": "text", "text": "[crab] Compaction: replace the conversation by your summary of it."}
    prompt = [{"type": "text", "text": FIND.text}]
    call = [{"type": "tool_use", "id": "toolu_bench_001_0", "name": "ls", "input": {}}]
    result = [{"type": "tool_result", "tool_use_id": "toolu_bench_001_0", "content": "calc/"}, in_place]
    assert server.place_anthropic(anthropic_request(prompt, call, result), short) == "summary"
    openai = {"messages": [{"role": "system", "content": "crab"}, {"role": "user", "content": FIND.text}]}
    assert server.place_openai(openai, short) == 0
    openai["messages"].append({"role": "user", "content": in_place["text"]})
    assert server.place_openai(openai, short) == "summary"


def test_the_fake_streams_the_bill_over_http() -> None:
    fake = server.FakeProviders(script.Script(script.SHORT))
    try:
        big = [{"name": "read", "description": "word " * 1500, "input_schema": {}, "cache_control": MARK}]
        body = anthropic_request([{"type": "text", "text": FIND.text}]) | {"tools": big}
        usages = []
        for _ in range(2):
            request = urllib.request.Request(f"{fake.url}/messages", json.dumps(body).encode(), method="POST")
            with urllib.request.urlopen(request, timeout=30) as response:
                events = [
                    json.loads(line[6:]) for line in response.read().decode().splitlines() if line.startswith("data: ")
                ]
            assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
            assert any(e.get("content_block", {}).get("type") == "tool_use" for e in events)  # step 0 calls ls
            usages.append(events[0]["message"]["usage"])
        cached = billing.anthropic_blocks(body)[0].tokens  # the tools: the prefix up to the marker
        assert usages[0]["cache_creation_input_tokens"] == cached and usages[0]["cache_read_input_tokens"] == 0
        assert usages[1]["cache_read_input_tokens"] == cached and usages[1]["cache_creation_input_tokens"] == 0
        assert [r.kind for r in fake.records] == ["step", "step"]
    finally:
        fake.close()


def test_a_marker_inside_a_tool_result_marks_the_result(clock: Any) -> None:
    cache = billing.AnthropicCache(clock)
    result = {"type": "tool_result", "tool_use_id": "t1", "content": [text(20, MARK)]}
    call = [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]
    first = body([tool("a", 1100)], [[text(5)], call, [result]])
    assert cache.bill(first).written == total(first)
    plain = {"type": "tool_result", "tool_use_id": "t1", "content": [text(20)]}
    second = body([tool("a", 1100)], [[text(5)], call, [plain, text(5, MARK)]])
    assert cache.bill(second).read == total(first)
