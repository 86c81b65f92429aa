"""crab_provider_kit's streamed HTTP: connection settings from a config table, and one streamed call over real HTTP."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from crab import ConfigError, ProviderError
from crab.config import PluginTable
from crab.events import ErrorEvent, RetryEvent, StreamEvent, TextDelta
from crab.testing import ReplayServer
from crab_provider_kit import HttpOptions, ServerSentEvent, read_http_options, stream_call

VENDOR = "https://api.example.com/v1"


def read(table: dict[str, object]) -> HttpOptions:
    return read_http_options(PluginTable("provider-x", table), default_base_url=VENDOR, default_key_env="X_API_KEY")


def test_defaults_and_the_key_rule() -> None:
    options = read({})
    assert (options.base_url, options.api_key_env, options.require_key) == (VENDOR, "X_API_KEY", True)
    assert (options.policy.max_retries, options.idle_timeout, options.connect_timeout) == (3, 300.0, 10.0)
    assert read({"base_url": "http://127.0.0.1:8080/v1/"}).require_key is False
    assert read({"base_url": "http://127.0.0.1:8080/v1", "api_key_env": "LOCAL_KEY"}).require_key is True
    assert read({"require_key": False}).require_key is False


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"base_url": "ftp://x"},
            'config: plugins.provider-x.base_url: expected the server\'s URL, like http://127.0.0.1:8080/v1, found "ftp://x"',
        ),
        ({"max_retries": 1.5}, "config: plugins.provider-x.max_retries: expected a whole number >= 0, found 1.5"),
        ({"retry_cap": "soon"}, 'config: plugins.provider-x.retry_cap: expected a number >= 0, found "soon"'),
        ({"idle_timeout": 0}, "config: plugins.provider-x.idle_timeout: expected a number >= 0.001, found 0"),
        ({"require_key": "yes"}, 'config: plugins.provider-x.require_key: expected true or false, found "yes"'),
        (
            {"headers": {"a": 1}},
            "config: plugins.provider-x.headers: expected a table of header name to string, found a table",
        ),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_key(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        read(table)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_key_for_names_the_variable_unless_none_is_required(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRAB_HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="set X_API_KEY"):
        read({}).key_for("x", env={})
    assert read({}).key_for("x", env={"X_API_KEY": "sk-x-123456789"}) == "sk-x-123456789"
    assert read({"base_url": "http://127.0.0.1:1/v1"}).key_for("x", env={}) is None


def test_importing_it_does_not_import_httpx() -> None:
    code = "import sys, crab_provider_kit; crab_provider_kit.HttpOptions; print('httpx' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


class LineParser:
    """A minimal wire format: each event's data is text; ``data: END`` ends the stream."""

    end_marker = "END"

    def __init__(self) -> None:
        self.done = False

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        if event.data == "END":
            self.done = True
            return []
        return [TextDelta(event.data)]

    def finish(self) -> list[StreamEvent]:
        return [TextDelta("!")]


def classify(status: int, body: str) -> ProviderError:
    return ProviderError(f"x: HTTP {status}: {body}", "server", retryable=status >= 500)


def run(server: ReplayServer, key: str = "sk-x-123456789") -> tuple[list[StreamEvent], Exception | None]:
    import asyncio

    options = read(server.provider_table("X_API_KEY"))
    call = options.call("x", f"{server.url}/stream", {"authorization": key}, b"{}", key, env={})

    async def collect() -> tuple[list[StreamEvent], Exception | None]:
        events: list[StreamEvent] = []
        try:
            async for event in stream_call(call, LineParser, classify):
                events.append(event)
        except Exception as exc:
            return events, exc
        return events, None

    return asyncio.run(collect())


def test_a_server_error_is_retried_and_the_key_is_redacted(tmp_path: Path) -> None:
    pytest.importorskip("httpx")
    (tmp_path / "ok.sse").write_text("data: hi\n\ndata: END\n\n")
    with ReplayServer(tmp_path) as server:
        server.script(server.error(500, b"bad key sk-x-123456789"), server.sse("ok.sse"))
        events, error = run(server)
    assert error is None
    (retry,) = [e for e in events if isinstance(e, RetryEvent)]
    assert "sk-x-123456789" not in retry.reason and "[redacted]" in retry.reason
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["hi", "!"]


def test_a_stream_without_its_end_marker_is_one_error_event(tmp_path: Path) -> None:
    pytest.importorskip("httpx")
    (tmp_path / "cut.sse").write_text("data: hi\n\n")
    with ReplayServer(tmp_path) as server:
        server.script(server.sse("cut.sse"))
        events, error = run(server)
    assert error is None
    assert isinstance(events[-1], ErrorEvent)
    assert "ended without END" in events[-1].message


def test_a_custom_base_url_never_gets_the_vendor_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRAB_HOME", str(tmp_path))
    (tmp_path / "auth.json").write_text('{"x": "sk-vendor-key-123456"}')
    vendor_env = {"X_API_KEY": "sk-vendor-key-123456"}
    assert read({}).key_for("x", env=vendor_env) == "sk-vendor-key-123456"
    other = read({"base_url": "https://another-host.example/v1"})
    assert other.key_for("x", env=vendor_env) is None  # neither the env var nor the auth file entry
    named = read({"base_url": "https://another-host.example/v1", "api_key_env": "OTHER_KEY"})
    assert named.key_for("x", env={"OTHER_KEY": "sk-other-1234567"}) == "sk-other-1234567"
    with pytest.raises(ConfigError, match="needs a key: set api_key_env"):
        read({"base_url": "https://another-host.example/v1", "require_key": True}).key_for("x", env=vendor_env)


def test_a_named_endpoint_must_give_its_url_and_uses_its_own_key_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CRAB_HOME", str(tmp_path))

    def endpoint(table: dict) -> HttpOptions:
        return read_http_options(
            PluginTable("provider-x.endpoints.local", table), default_base_url=None, default_key_env="LOCAL_API_KEY"
        )

    with pytest.raises(
        ConfigError, match=r"plugins\.provider-x\.endpoints\.local\.base_url: expected .*, found nothing"
    ):
        endpoint({})
    options = endpoint({"base_url": "http://127.0.0.1:9/v1"})
    assert options.require_key is False
    assert options.key_for("local", env={"LOCAL_API_KEY": "sk-local-12345678"}) == "sk-local-12345678"
    assert options.key_for("local", env={}) is None


class NoEndParser:
    """A parser written from the README before it said ``done`` and ``end_marker`` are needed."""

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        return [TextDelta(event.data)]

    def finish(self) -> list[StreamEvent]:
        return []


def test_a_parser_without_done_or_end_marker_is_named_before_any_request(tmp_path: Path) -> None:
    """It was "malformed stream (AttributeError: ... no attribute 'done')" after the request."""
    import asyncio

    pytest.importorskip("httpx")
    with ReplayServer(tmp_path) as server:
        options = read(server.provider_table("X_API_KEY"))
        call = options.call("x", f"{server.url}/stream", {}, b"{}", None, env={})

        async def first() -> object:
            return await anext(aiter(stream_call(call, NoEndParser, classify)))

        with pytest.raises(TypeError) as info:
            asyncio.run(first())
        assert server.requests == []
    message = str(info.value)
    assert "NoEndParser without end_marker, done" in message
    assert "feed(event) and finish()" in message


@pytest.mark.parametrize(
    ("chunks", "complete"),
    [
        ([b"data: hi\r\r", b"data: END\r", b"\r"], True),  # CR line ends, the last CR the very last byte
        ([b"data: hi\n\n", b"data: END\n"], False),  # the server closed before END's blank line
    ],
)
def test_the_end_marker_counts_only_when_its_event_is_complete(
    tmp_path: Path, chunks: list[bytes], complete: bool
) -> None:
    from crab.testing import HttpReply

    pytest.importorskip("httpx")
    with ReplayServer(tmp_path) as server:
        server.script(HttpReply(events=chunks))
        events, error = run(server)
    assert error is None
    if complete:
        assert [e.text for e in events if isinstance(e, TextDelta)] == ["hi", "!"]
    else:
        assert isinstance(events[-1], ErrorEvent)
        assert "ended without END" in events[-1].message


def test_a_stream_that_never_ends_its_line_is_one_error_event(tmp_path: Path) -> None:
    pytest.importorskip("httpx")
    (tmp_path / "endless.sse").write_bytes(b"data: hi\n\ndata: " + b"z" * (33 * 1024 * 1024))
    with ReplayServer(tmp_path) as server:
        server.script(server.sse("endless.sse"))
        events, error = run(server)
    assert error is None
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["hi"]
    assert isinstance(events[-1], ErrorEvent) and "over 32 MiB" in events[-1].message, events[-1]
