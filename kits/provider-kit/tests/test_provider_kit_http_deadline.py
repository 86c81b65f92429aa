"""Model calls have a deadline (crab_provider_kit.stream_call): request_timeout bounds a call, retries included,
whatever the server sends meanwhile; idle_timeout counts from the last meaningful event.

Real servers on 127.0.0.1 (``crab.testing.http_replay``): one that sends keep-alive comments
forever, one that streams text forever without ending, one that accepts and never answers.
Each test is bounded at a few seconds by request_timeout = 1 (the assertions on elapsed time
are generous: they tell a bounded call from one held for attempts x idle_timeout).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from crab import ConfigError, ProviderError
from crab.config import PluginTable
from crab.events import ErrorEvent, RetryEvent, StreamEvent, TextDelta
from crab.testing import HttpReply, ReplayServer, make_config
from crab_provider_kit import (
    DEFAULT_REQUEST_TIMEOUT,
    ServerSentEvent,
    read_http_options,
    request_timeout_from,
    stream_call,
)

pytest.importorskip("httpx")


class LineParser:
    """Each event's data is text; ``data: END`` ends the stream."""

    end_marker = "END"

    def __init__(self) -> None:
        self.done = False

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        if event.data == "END":
            self.done = True
            return []
        return [TextDelta(event.data)] if event.data else []  # an empty delta is not progress

    def finish(self) -> list[StreamEvent]:
        return []


def classify(status: int, body: str) -> ProviderError:
    return ProviderError(f"x: HTTP {status}", "server", retryable=status >= 500)


def run(server: ReplayServer, crab_wide: float = DEFAULT_REQUEST_TIMEOUT, **table: Any):
    options = read_http_options(
        PluginTable("x", server.provider_table("X_API_KEY", **table)), default_base_url=None, default_key_env="X"
    )
    call = options.call("x", f"{server.url}/stream", {}, b"{}", None, env={}, request_timeout=crab_wide)

    async def collect() -> tuple[list[StreamEvent], Exception | None]:
        events: list[StreamEvent] = []
        try:
            async for event in stream_call(call, LineParser, classify):
                events.append(event)
        except ProviderError as exc:
            return events, exc
        return events, None

    started = time.monotonic()
    events, error = asyncio.run(collect())
    return events, error, time.monotonic() - started


def test_keepalive_comments_do_not_count_as_progress():
    with ReplayServer() as server:
        server.script(HttpReply(events=[b"data: \n\n"], keepalive_every=0.2))
        events, error, elapsed = run(server, idle_timeout=1.0, request_timeout=30.0)
    assert error is None
    assert isinstance(events[-1], ErrorEvent) and events[-1].kind == "stream"
    assert "went idle" in events[-1].message and "idle_timeout" in events[-1].message
    assert elapsed < 10


def test_request_timeout_ends_a_stream_that_keeps_sending():
    chatter = [b"data: more\n\n"] * 40  # text for a while, then only keep-alives: never END
    with ReplayServer() as server:
        server.script(HttpReply(events=chatter, keepalive_every=0.2))
        events, error, elapsed = run(server, crab_wide=1.0, idle_timeout=30.0)
    assert error is None
    assert any(isinstance(e, TextDelta) for e in events)
    assert isinstance(events[-1], ErrorEvent)
    assert "request_timeout (1 s)" in events[-1].message and "[crab] request_timeout" in events[-1].message
    assert elapsed < 10


def test_a_server_that_never_answers_is_bounded_by_request_timeout_not_attempts():
    with ReplayServer() as server:
        server.script(*[HttpReply(silent=True) for _ in range(4)])
        events, error, elapsed = run(server, crab_wide=1.0, idle_timeout=30.0, max_retries=3)
    assert isinstance(error, ProviderError) and not events
    assert "within request_timeout (1 s)" in str(error) and "raise [crab] request_timeout" in str(error)
    assert elapsed < 10  # not 4 attempts x 30 s


def test_retries_stop_at_the_deadline():
    with ReplayServer() as server:
        server.script(*[HttpReply(silent=True) for _ in range(50)])
        events, error, elapsed = run(server, crab_wide=1.5, idle_timeout=0.3, max_retries=40, retry_base_delay=0.01)
    assert isinstance(error, ProviderError) and "request_timeout" in str(error)
    assert 1 < sum(isinstance(e, RetryEvent) for e in events) < 40
    assert elapsed < 10


def test_a_retry_that_would_wait_past_the_deadline_is_not_started():
    with ReplayServer() as server:
        server.script(server.error(503, {"error": "busy"}, {"retry-after": "5"}))
        events, error, elapsed = run(server, crab_wide=1.0, retry_cap=60.0)
    assert isinstance(error, ProviderError)
    assert "would pass request_timeout" in str(error) and not events
    assert elapsed < 4


def test_the_provider_table_overrides_the_crab_wide_value():
    with ReplayServer() as server:
        server.script(HttpReply(silent=True))
        _, error, _ = run(server, crab_wide=600.0, request_timeout=0.5, max_retries=0)
    assert "within request_timeout (0.5 s)" in str(error)


def test_request_timeout_from_config():
    assert request_timeout_from(make_config()) == DEFAULT_REQUEST_TIMEOUT == 600.0
    assert request_timeout_from(make_config({"crab.request_timeout": 2})) == 2.0
    for bad in (0, -1, "10", True):
        with pytest.raises(ConfigError, match=r"crab\.request_timeout"):
            request_timeout_from(make_config({"crab.request_timeout": bad}))
    with pytest.raises(ConfigError, match=r"plugins\.x\.request_timeout"):
        read_http_options(
            PluginTable("x", {"base_url": "http://h", "request_timeout": 0}), default_base_url=None, default_key_env="X"
        )


def test_pings_do_not_count_as_progress():
    with ReplayServer() as server:
        server.script(HttpReply(events=[b"event: ping\ndata: {}\n\n"] * 100, event_gap=0.05))
        events, error, elapsed = run(server, idle_timeout=1.0, max_retries=0)
    assert error is None and "went idle" in events[-1].message
    assert elapsed < 10


def test_events_a_parser_holds_still_count_as_progress():
    # Empty deltas yield nothing (as tool call arguments yield nothing until the end), yet the
    # server is producing: 2 s of them at 0.2 s apart must not trip a 1 s idle_timeout.
    held = [b"data: \n\n"] * 10 + [b"data: done\n\n", b"data: END\n\n"]
    with ReplayServer() as server:
        server.script(HttpReply(events=held, event_gap=0.2))
        events, error, _ = run(server, idle_timeout=1.0, max_retries=0)
    assert error is None
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["done"]
    assert not any(isinstance(e, ErrorEvent) for e in events)


@pytest.mark.parametrize("key", ["idle_timeout", "request_timeout", "connect_timeout", "retry_cap"])
def test_a_nested_provider_table_refuses_nan_and_inf(key):
    # An endpoint's table is read by PluginTable, not by a declared table: nan passed its bound.
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ConfigError, match=rf"plugins\.x\.{key}"):
            read_http_options(
                PluginTable("x", {"base_url": "http://h", key: bad}), default_base_url=None, default_key_env="X"
            )
