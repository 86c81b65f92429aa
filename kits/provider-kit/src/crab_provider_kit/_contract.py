"""``ProviderContract``: the pytest suite an HTTP model provider passes, as ``crab.testing.StoreContract``
is for stores: the faults of a model call and the API key that must never leak.

Every test runs the provider under test against ``crab.testing.ReplayServer``, a real HTTP/1.1
server on 127.0.0.1, through the provider's own ``stream`` (so through ``stream_call`` when it uses
this kit): error statuses 401/403/404/400/413/429/5xx, ``Retry-After`` (seconds, an HTTP date, one
above ``retry_cap``), retries running out, a refused port, a reset before the first byte, a drop
mid-stream, a malformed event, a stream without its end marker, an idle stream; and, end to end
through the ``crab`` command in a subprocess, the key in no byte crab printed or stored.

Subclass it in a test module (the class name must start with ``Test``), set the class attributes
below and implement ``make_provider`` and ``error_body``::

    class TestToyContract(ProviderContract):
        fixtures = Path(__file__).parent / "fixtures"
        key_env = "CRAB_TEST_TOY_KEY"
        model = "toy-1"
        tool_stream, tool_cut_after = "tool_use.sse", 3
        missing_end_stream, end_marker = "missing_done.sse", "[DONE]"
        malformed_event = b'data: {"text": 5}\\n\\n'
        plugin, cli_model, auth_name = "toy", "toy/toy-1", "toy"

        def make_provider(self, table, env):
            return ToyProvider(table, env=env)

        def error_body(self, kind, message):
            return {"error": {"message": message, "type": kind}}

A missing attribute fails every test with one line naming it. This lives in the kit, not in
``crab.testing``: what it checks is the behaviour of ``stream_call`` and the connection keys of
``read_http_options`` (the table ``ReplayServer.provider_table`` writes), and core keeps no code
for one family of plugins. It imports pytest, so it is loaded only when a test asks for it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import time
from collections.abc import Iterator, Mapping
from email.utils import formatdate
from pathlib import Path
from typing import Any, ClassVar

import pytest
from crab import ContextOverflowError, ModelRequest, Provider, ProviderError
from crab.events import ErrorEvent, MessageEnd, RetryEvent, StreamEvent, TextDelta, ToolCallEvent
from crab.messages import UserMessage
from crab.testing import CRAB, RecordedRequest, ReplayServer, collect_stream, find_secret, run_crab

_REQUIRED = (
    "fixtures",
    "key_env",
    "model",
    "tool_stream",
    "tool_cut_after",
    "missing_end_stream",
    "end_marker",
    "malformed_event",
    "plugin",
    "cli_model",
    "auth_name",
)

_needs_crab = pytest.mark.skipif(CRAB is None, reason="the crab console script is not installed in this environment")


class ProviderContract:
    """Subclass it, set the attributes, implement ``make_provider`` and ``error_body``."""

    fixtures: ClassVar[Path]
    """The folder of the provider's recorded SSE fixtures (``ReplayServer(fixtures)``)."""
    key_env: ClassVar[str]
    """The variable the test key is put in (``api_key_env`` of the table)."""
    api_key: ClassVar[str] = "sk-contract-test-7f6e5d4c3b2a190817263544"
    """The fake key; no test output may ever hold it."""
    model: ClassVar[str]
    """The model id requests ask for."""
    text_stream: ClassVar[str] = "text_usage.sse"
    """A fixture whose reply is the text ``text`` and nothing else."""
    text: ClassVar[str] = "Hello, world!"
    text_cut_after: ClassVar[int] = 3
    """An event number of ``text_stream`` after its first text, before its end."""
    tool_stream: ClassVar[str]
    """A fixture whose reply asks for at least one tool call."""
    tool_cut_after: ClassVar[int]
    """An event number of ``tool_stream`` after some content, before its end: the drop point."""
    missing_end_stream: ClassVar[str]
    """A fixture that stops before the provider's end marker (text and a tool call, no end)."""
    end_marker: ClassVar[str]
    """What the "stream ended without …" error names: the parser's ``end_marker``."""
    error_before_content_stream: ClassVar[str | None] = None
    """A fixture that is a retryable error event before any content (None: the test is skipped)."""
    malformed_event: ClassVar[bytes]
    """One complete SSE event (ending in a blank line) of a shape the parser rejects."""
    malformed_at: ClassVar[int] = 2
    """Where in ``text_stream`` the malformed event is put."""
    plugin: ClassVar[str]
    """The plugin's name: its config table is ``[plugins.<plugin>]``."""
    cli_model: ClassVar[str]
    """The model as ``crab run --model`` takes it (``provider/model``)."""
    auth_name: ClassVar[str]
    """The provider's name in ``auth.json`` (``crab.secrets.lookup_key``)."""

    def make_provider(self, table: dict[str, Any], env: Mapping[str, str]) -> Provider:
        """The provider under test, configured from ``table`` with the keys in ``env``."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_provider(table, env)")

    def error_body(self, kind: str, message: str) -> Any:
        """The vendor's error body (JSON-able, or bytes) saying ``message``.

        ``kind`` is one of ``auth``, ``permission``, ``rate_limit``, ``server``, ``not_found``,
        ``invalid_request``: the error the body's own code or type should name.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement error_body(kind, message)")

    def check_subclass(self) -> None:
        """Raise ``TypeError`` naming every class attribute the subclass did not set."""
        missing = [name for name in _REQUIRED if not hasattr(self, name)]
        if missing:
            raise TypeError(f"{type(self).__name__} (a ProviderContract) must set: {', '.join(missing)}")

    def sent_key(self, request: RecordedRequest) -> str | None:
        """The key a request carried; by default ``authorization: Bearer <key>``."""
        value = request.headers.get("authorization", "")
        return value.removeprefix("Bearer ") if value.startswith("Bearer ") else None

    # -- fixtures ------------------------------------------------------------------------------

    @pytest.fixture(autouse=True)
    def contract_home(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        """Checks the subclass, and keeps the developer's ~/.crab and real keys out of every test."""
        self.check_subclass()
        home = tmp_path / "crab-home"
        monkeypatch.setenv("CRAB_HOME", str(home))
        for name in [n for n in os.environ if n.endswith("_API_KEY")]:
            monkeypatch.delenv(name)
        return home

    @pytest.fixture
    def contract_server(self) -> Iterator[ReplayServer]:
        with ReplayServer(self.fixtures) as replay:
            yield replay

    # -- helpers -------------------------------------------------------------------------------

    def provider(self, server: ReplayServer, **overrides: Any) -> Provider:
        """The provider aimed at ``server`` with the test key and tiny retry delays."""
        return self.make_provider(server.provider_table(self.key_env, **overrides), {self.key_env: self.api_key})

    def request(self, model: str | None = None) -> ModelRequest:
        return ModelRequest(model=model or self.model, system="be brief", messages=(UserMessage("hi"),))

    def run(self, provider: Provider, model: str | None = None) -> tuple[list[StreamEvent], Exception | None]:
        return collect_stream(provider, self.request(model))

    def error(self, server: ReplayServer, status: int, kind: str, message: str, **headers: str) -> Any:
        return server.error(
            status, self.error_body(kind, message), {k.replace("_", "-"): v for k, v in headers.items()}
        )

    def assert_no_key(self, *texts: object) -> None:
        for text in texts:
            assert self.api_key not in str(text), "the API key shows up in what the provider returned"

    def assert_failed_cleanly(self, events: list[StreamEvent], error: Exception | None) -> ErrorEvent:
        """One ErrorEvent at the end, and nothing that would make the loop run a tool or keep a reply."""
        assert error is None, (
            f"the stream raised {error!r}: a failure must end the stream as one ErrorEvent, not an exception"
        )
        assert events, "the stream yielded nothing"
        assert isinstance(events[-1], ErrorEvent), f"a failed stream must end with an ErrorEvent, not {events[-1:]}"
        assert sum(isinstance(e, ErrorEvent) for e in events) == 1, "a failed stream must yield exactly one ErrorEvent"
        assert not any(isinstance(e, ToolCallEvent | MessageEnd) for e in events), (
            "a failed stream must yield no ToolCallEvent and no MessageEnd: the loop would run or keep them"
        )
        self.assert_no_key(repr(events))
        return events[-1]

    def expect_error(self, error: Exception | None, kind: str, what: str) -> ProviderError:
        """``error`` is the ``crab.ProviderError`` of ``kind`` that ``what`` must raise."""
        assert isinstance(error, ProviderError), f"{what} must raise crab.ProviderError (kind {kind!r}), not {error!r}"
        assert error.kind == kind, f"{what} must be a ProviderError of kind {kind!r}, not {error.kind!r}: {error}"
        return error

    def assert_answered(self, events: list[StreamEvent], error: Exception | None) -> MessageEnd:
        assert error is None, f"the stream raised {error!r}: it must answer (after its retries)"
        assert isinstance(events[-1], MessageEnd), f"an answered stream must end with a MessageEnd, not {events[-1:]}"
        return events[-1]

    # -- error statuses ------------------------------------------------------------------------

    def test_401_names_the_key_variable_and_never_the_key(self, contract_server: ReplayServer) -> None:
        contract_server.script(self.error(contract_server, 401, "auth", f"Incorrect API key provided: {self.api_key}"))
        events, error = self.run(self.provider(contract_server))
        self.expect_error(error, "auth", "a 401")
        assert self.key_env in str(error), f"a 401 must say which variable to set ({self.key_env}): {error}"
        self.assert_no_key(error, repr(events))
        assert len(contract_server.requests) == 1, "a 401 must not be retried (the key will not get better)"
        assert self.sent_key(contract_server.requests[0]) == self.api_key, "the key did not go where it belongs"

    def test_403_is_an_auth_error_without_the_key(self, contract_server: ReplayServer) -> None:
        contract_server.script(self.error(contract_server, 403, "permission", f"key {self.api_key} may not use this"))
        events, error = self.run(self.provider(contract_server))
        error = self.expect_error(error, "auth", "a 403")
        assert not error.retryable, "a 403 must not be retryable"
        self.assert_no_key(error, repr(events))
        assert len(contract_server.requests) == 1, "a 403 must not be retried"

    def test_unknown_model_says_so(self, contract_server: ReplayServer) -> None:
        contract_server.script(self.error(contract_server, 404, "not_found", "model: no-such-model-9"))
        _, error = self.run(self.provider(contract_server), "no-such-model-9")
        self.expect_error(error, "model_not_found", "a 404 for a model")
        assert "no-such-model-9" in str(error), f"an unknown model's error must name the model asked for: {error}"

    def test_invalid_request_is_not_retried(self, contract_server: ReplayServer) -> None:
        contract_server.script(self.error(contract_server, 400, "invalid_request", "messages: roles must alternate"))
        _, error = self.run(self.provider(contract_server))
        self.expect_error(error, "invalid_request", "a 400")
        assert "roles must alternate" in str(error), f"a 400 must carry the vendor's message: {error}"
        assert len(contract_server.requests) == 1, "a 400 must not be retried (the same request fails the same way)"

    def test_request_too_large_is_a_context_overflow(self, contract_server: ReplayServer) -> None:
        contract_server.script(contract_server.error(413, b"Request Entity Too Large"))
        _, error = self.run(self.provider(contract_server))
        assert isinstance(error, ContextOverflowError), (
            f"a 413 must raise crab.ContextOverflowError (so the loop compacts), not {error!r}"
        )
        assert not error.retryable, "a 413 must not be retryable"
        assert len(contract_server.requests) == 1, "a 413 must not be retried"

    # -- retries -------------------------------------------------------------------------------

    def test_429_with_retry_after_waits_that_long(self, contract_server: ReplayServer) -> None:
        contract_server.script(
            self.error(contract_server, 429, "rate_limit", "Rate limit reached", retry_after="1"),
            contract_server.sse(self.text_stream),
        )
        events, error = self.run(self.provider(contract_server))
        retries = [e for e in events if isinstance(e, RetryEvent)]
        assert len(retries) == 1, f"a 429 with Retry-After must be retried once, with one RetryEvent, not {retries}"
        retry = retries[0]
        assert (retry.delay, retry.attempt) == (1.0, 2), (
            f"a 429 with Retry-After: 1 must wait 1 s before attempt 2, not {retry}"
        )
        assert "Rate limit reached" in retry.reason, f"the RetryEvent must carry the vendor's message: {retry.reason}"
        waited = contract_server.requests[1].at - contract_server.requests[0].at
        assert 0.9 <= waited < 2.5, f"Retry-After: 1 must be honoured (about 1 s between attempts), not {waited:.2f} s"
        assert self.assert_answered(events, error).message.content == self.text, "the retried call must answer the text"

    def test_retry_after_above_the_cap_fails_at_once(self, contract_server: ReplayServer) -> None:
        contract_server.script(
            self.error(contract_server, 429, "rate_limit", "Slow down for an hour", retry_after="3600")
        )
        started = time.monotonic()
        events, error = self.run(self.provider(contract_server, retry_cap=60))
        assert time.monotonic() - started < 1.0, "a Retry-After above retry_cap must fail at once, not wait"
        self.expect_error(error, "rate_limit", "a 429 asking for more than retry_cap")
        assert "Slow down for an hour" in str(error), f"the error must carry the vendor's message: {error}"
        assert "retry cap" in str(error), f"the error must say the wait is above the retry cap: {error}"
        assert len(contract_server.requests) == 1, "a Retry-After above retry_cap must not be retried"
        assert not any(isinstance(e, RetryEvent) for e in events), (
            "a Retry-After above retry_cap must yield no RetryEvent"
        )

    def test_retry_after_as_an_http_date(self, contract_server: ReplayServer) -> None:
        later = formatdate(time.time() + 7200, usegmt=True)
        contract_server.script(self.error(contract_server, 503, "server", "busy", retry_after=later))
        _, error = self.run(self.provider(contract_server))
        assert isinstance(error, ProviderError), (
            f"a 503 with a Retry-After date 2 h away must raise crab.ProviderError, not {error!r}"
        )
        assert "retry cap" in str(error), (
            f"Retry-After as an HTTP date must be read (2 h is above the retry cap): {error}"
        )

    def test_500_then_success(self, contract_server: ReplayServer) -> None:
        contract_server.script(
            self.error(contract_server, 500, "server", "internal"), contract_server.sse(self.tool_stream)
        )
        events, error = self.run(self.provider(contract_server))
        assert sum(isinstance(e, RetryEvent) for e in events) == 1, "a 500 must be retried once, with one RetryEvent"
        assert self.assert_answered(events, error).message.tool_calls, "the retried call must answer with its tool call"

    def test_retries_run_out_and_the_last_error_is_raised(self, contract_server: ReplayServer) -> None:
        contract_server.script(*[contract_server.error(502, b"bad gateway") for _ in range(3)])
        events, error = self.run(self.provider(contract_server, max_retries=2))
        self.expect_error(error, "server", "a 502 after every retry")
        assert "gave up after 3 attempts" in str(error), f"the error must say how many attempts were made: {error}"
        attempts = [e.attempt for e in events if isinstance(e, RetryEvent)]
        assert attempts == [2, 3], f"max_retries=2 must yield RetryEvents for attempts 2 and 3, not {attempts}"
        assert len(contract_server.requests) == 3, "max_retries=2 must make 3 requests in all"

    def test_connection_reset_before_the_first_byte_retries(self, contract_server: ReplayServer) -> None:
        contract_server.script(contract_server.reset(), contract_server.sse(self.text_stream))
        events, error = self.run(self.provider(contract_server))
        retries = [e for e in events if isinstance(e, RetryEvent)]
        assert len(retries) == 1, (
            f"a reset before the first byte must be retried once, with one RetryEvent, not {retries}"
        )
        retry = retries[0]
        assert "connection" in retry.reason, f"the RetryEvent must say the connection failed: {retry.reason}"
        self.assert_answered(events, error)
        assert len(contract_server.requests) == 2, "a reset before the first byte must be retried once"

    def test_error_streamed_before_any_content_retries(self, contract_server: ReplayServer) -> None:
        if self.error_before_content_stream is None:
            pytest.skip("no error_before_content_stream fixture named")
        contract_server.script(
            contract_server.sse(self.error_before_content_stream), contract_server.sse(self.text_stream)
        )
        events, error = self.run(self.provider(contract_server))
        assert sum(isinstance(e, RetryEvent) for e in events) == 1, (
            "an error event before any content must be retried once"
        )
        assert self.assert_answered(events, error).message.content == self.text, "the retried call must answer the text"

    def test_unreachable_server_retries_then_fails(self, contract_server: ReplayServer) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        events, error = self.run(self.provider(contract_server, base_url=f"http://127.0.0.1:{port}/v1", max_retries=1))
        self.expect_error(error, "network", "a refused port after its retries")
        assert sum(isinstance(e, RetryEvent) for e in events) == 1, (
            "a refused port must be retried (max_retries=1: once)"
        )
        self.assert_no_key(error, repr(events))

    # -- faults of a stream --------------------------------------------------------------------

    def test_disconnect_mid_stream_is_an_error_and_no_tool_call_runs(self, contract_server: ReplayServer) -> None:
        contract_server.script(
            contract_server.sse(self.tool_stream, cut_after=self.tool_cut_after), contract_server.sse(self.tool_stream)
        )
        events, error = self.run(self.provider(contract_server))
        failure = self.assert_failed_cleanly(events, error)
        assert failure.kind == "stream", (
            f"a drop mid-stream must be an ErrorEvent of kind 'stream', not {failure.kind!r}"
        )
        assert "dropped mid-stream" in failure.message, (
            f"the ErrorEvent must say the stream dropped mid-stream: {failure.message}"
        )
        # Content had streamed, so the call is not retried (a retry would duplicate output).
        assert len(contract_server.requests) == 1, (
            "a stream that dropped after content must not be retried (output would repeat)"
        )

    def test_a_stream_without_its_end_marker_is_an_error(self, contract_server: ReplayServer) -> None:
        contract_server.script(contract_server.sse(self.missing_end_stream))
        events, error = self.run(self.provider(contract_server))
        failure = self.assert_failed_cleanly(events, error)
        assert failure.kind == "stream", (
            f"a stream without its end marker must be an ErrorEvent of kind 'stream', not {failure.kind!r}"
        )
        assert self.end_marker in failure.message, (
            f"the ErrorEvent must name the missing end marker {self.end_marker!r}: {failure.message}"
        )

    def test_a_malformed_event_ends_as_an_error_not_a_traceback(self, contract_server: ReplayServer) -> None:
        reply = contract_server.sse(self.text_stream)
        reply.events.insert(self.malformed_at, self.malformed_event)
        contract_server.script(reply)
        events, error = self.run(self.provider(contract_server))
        message = self.assert_failed_cleanly(events, error).message
        assert "malformed stream" in message, (
            f"a malformed event must end as an ErrorEvent saying 'malformed stream': {message}"
        )

    def test_an_idle_stream_times_out_as_an_error(self, contract_server: ReplayServer) -> None:
        contract_server.script(
            contract_server.sse(self.tool_stream, stall_after=self.tool_cut_after, stall_seconds=3.0)
        )
        started = time.monotonic()
        events, error = self.run(self.provider(contract_server, idle_timeout=0.3))
        assert time.monotonic() - started < 2.0, "a stream idle past idle_timeout must end then, not run on"
        message = self.assert_failed_cleanly(events, error).message
        assert "idle" in message, f"an idle stream's ErrorEvent must say it was idle: {message}"

    def test_text_streamed_before_a_drop_is_kept_but_the_reply_is_not(self, contract_server: ReplayServer) -> None:
        contract_server.script(contract_server.sse(self.text_stream, cut_after=self.text_cut_after))
        events, error = self.run(self.provider(contract_server))
        self.assert_failed_cleanly(events, error)
        shown = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert shown, "no text arrived before the drop"
        assert self.text.startswith(shown), f"the text shown before the drop must be the reply's start, not {shown!r}"

    # -- end to end: the key in no byte crab printed or stored ---------------------------------

    def write_config(self, home: Path, server: ReplayServer) -> None:
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            f'[plugins.{self.plugin}]\nbase_url = "{server.url}"\napi_key_env = "{self.key_env}"\n'
            "retry_base_delay = 0.01\n"
        )

    def store(self) -> str:
        return "jsonl" if importlib.util.find_spec("crab_tape_jsonl") else "memory"

    def check_round_trip(self, requests: list[RecordedRequest]) -> None:
        """Override to check the second request carried the tool results in the vendor's shape."""

    @pytest.mark.slow
    @_needs_crab
    def test_key_never_printed_or_stored(self, contract_server: ReplayServer, contract_home: Path) -> None:
        self.write_config(contract_home, contract_server)
        store = self.store()
        # A tool call (for a tool that does not exist), then the answer; then a 401 echoing the key.
        contract_server.script(contract_server.sse(self.tool_stream), contract_server.sse(self.text_stream))
        ok = self.crab(contract_home, "run", "what is the weather?", "--output", "jsonl", "--store", store, "--yolo")
        assert ok.returncode == 0, f"crab run through the plugin must succeed: {ok.stderr}"
        events = [json.loads(line) for line in ok.stdout.splitlines() if line.strip()]
        assert any(e.get("type") == "tool_call" for e in events), (
            "the tool_stream fixture's tool call must reach crab run"
        )
        # Two model calls: at most one usage event each (the loop's), none from the provider itself.
        assert [e["type"] for e in events].count("usage") <= 2, (
            "the provider must not emit UsageEvents itself (the loop does)"
        )
        assert self.text in ok.stdout, "crab run must print the answer"
        assert self.sent_key(contract_server.requests[0]) == self.api_key, f"the key in {self.key_env} must be sent"
        self.check_round_trip(contract_server.requests)
        if store == "jsonl":
            stored = b"".join(p.read_bytes() for p in contract_home.rglob("*") if p.is_file())
            assert self.text.encode() in stored, "the session must be stored (so the key scan below covers it)"

        contract_server.script(self.error(contract_server, 401, "auth", f"Incorrect API key provided: {self.api_key}"))
        denied = self.crab(contract_home, "run", "hi", "--store", store)
        assert denied.returncode != 0, "crab run must fail on a 401"
        assert self.key_env in denied.stdout + denied.stderr, (
            f"a 401 through crab run must say which variable to set ({self.key_env})"
        )
        assert find_secret(contract_home, ok, self.api_key) == [], "the key must be in no byte crab printed or stored"
        assert find_secret(contract_home, denied, self.api_key) == [], (
            "the key must be in no byte crab printed or stored after a 401"
        )

    @pytest.mark.slow
    @_needs_crab
    def test_key_from_the_auth_file_stays_in_the_auth_file(
        self, contract_server: ReplayServer, contract_home: Path
    ) -> None:
        self.write_config(contract_home, contract_server)
        (contract_home / "auth.json").write_text(json.dumps({self.auth_name: self.api_key}))
        contract_server.script(contract_server.sse(self.text_stream))
        result = self.crab(contract_home, "run", "hi", "--store", self.store(), key=False)
        assert result.returncode == 0, f"crab run with the key in auth.json must succeed: {result.stderr}"
        assert self.text in result.stdout, "crab run must print the answer"
        assert self.sent_key(contract_server.requests[0]) == self.api_key, (
            f"the key in auth.json under {self.auth_name!r} must be sent"
        )
        assert find_secret(contract_home, result, self.api_key, skip=("auth.json",)) == [], (
            "a key from auth.json must be in no byte crab printed or stored outside auth.json"
        )

    @pytest.mark.slow
    @_needs_crab
    def test_missing_key_stops_before_any_request_with_exit_code_2(
        self, contract_server: ReplayServer, contract_home: Path
    ) -> None:
        self.write_config(contract_home, contract_server)
        result = self.crab(contract_home, "run", "hi", key=False)
        assert result.returncode == 2, f"a missing key must exit 2 (a config error), not {result.returncode}"
        lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
        assert len(lines) == 1, f"a missing key must be one line, not {lines}"
        assert f"set {self.key_env}" in lines[0], f"a missing key must say to set {self.key_env}: {lines[0]}"
        assert contract_server.requests == [], "a missing key must stop crab before any request"

    def crab(self, home: Path, *args: str, key: bool = True) -> Any:
        """``crab ARGS --model <cli_model>`` in a subprocess, with the test key in ``key_env`` if ``key``."""
        env = {self.key_env: self.api_key} if key else {}
        return run_crab(home, *args, "--model", self.cli_model, env=env)
