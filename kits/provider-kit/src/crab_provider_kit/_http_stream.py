"""Streaming HTTP for model providers: one POST, retries for what may be retried, and the
response body fed through ``SSEDecoder`` into a provider's own stream parser.

Owns the HTTP side every SSE-speaking provider plugin shares: timeouts, status → typed error
through the provider's ``classify``, ``Retry-After``
handling via ``RetryPolicy``, redaction of the key from every message, and the faults of a
stream (dropped connection, idle stream, malformed chunk, oversized line or event, missing end
marker) as one ``ErrorEvent``. The wire format stays in the plugin: it passes a ``StreamParser`` and a
``classify`` function. A failure retries only while nothing has reached the caller (an error
status, a refused or reset connection, or an error the server streams before any content), so
a retry is never seen as duplicated text.

Three limits bound a model call (each error says which one was hit and which key raises it):

- ``connect_timeout``: to open the connection;
- ``idle_timeout``: since the last *meaningful* event, any server-sent event other than a
  ``ping`` (a parser may hold what it gets, such as tool call arguments, until the end, so
  counting only what it yields would cut a long tool call short). Keep-alive comments
  (``: keep-alive``) and ``ping`` events do not count, whatever the bytes;
- ``request_timeout`` (``[crab] request_timeout``, default 600 s; a provider table may set its
  own): the whole call from the first attempt to the last byte, retries and their waits included,
  whatever the server sends meanwhile. A retry whose wait would pass it is not started.

Also the connection settings those plugins read from their config tables with the same keys and
defaults (``HttpOptions``, from ``read_http_options``: ``base_url``, ``api_key_env``,
``require_key``, ``max_retries``, ``retry_base_delay``, ``retry_cap``, ``idle_timeout``,
``connect_timeout``, ``request_timeout``, ``headers``), declared by ``http_settings`` for a plugin's
config table, read with ``crab.config.PluginTable``, and the key-routing rule an untrusted project
obeys (``key_routing``).

httpx (a dependency of this kit; ``crab-core[http]`` installs the kit) is imported inside the
functions that use it, never at import of this module, so ``crab --help`` does not load it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from crab import Config, ConfigError, ContextOverflowError, ProviderError, Setting
from crab.config import PluginTable
from crab.events import ErrorEvent, RetryEvent, StreamEvent
from crab.secrets import Redactor, known_secrets, lookup_key, missing_key_message

from crab_provider_kit._retry import RetryPolicy, retry_after_from_headers
from crab_provider_kit._sse import ServerSentEvent, SSEDecoder

Parts = tuple[str, ...]
"""A dotted config key as its parts: ``("plugins", "provider-x", "extra_body")``."""

if TYPE_CHECKING:
    import httpx

DEFAULT_REQUEST_TIMEOUT = 600.0
"""Seconds a whole model call may take, retries included, unless ``[crab] request_timeout`` says."""
REQUEST_TIMEOUT_KEY = "crab.request_timeout"


def request_timeout_from(config: Config) -> float:
    """The crab-wide ``[crab] request_timeout`` (seconds, > 0); a bad value is a one-line error."""
    value: Any = config.get(REQUEST_TIMEOUT_KEY, DEFAULT_REQUEST_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"config: crab.request_timeout must be a number of seconds above 0, not {value!r}")
    return float(value)


class StreamParser(Protocol):
    """What ``stream_call`` needs from a provider's pure stream parser: all four members.

    ``make_parser()`` gives a fresh one per attempt; ``stream_call`` checks it has them before
    any request and raises ``TypeError`` naming what is missing. No IO, no clock: bytes are the
    kit's, the wire format is the parser's.
    """

    end_marker: str
    """What ends a complete reply on this wire (``"[DONE]"``, ``"message_stop"``); errors name it
    when a stream stops before it."""
    done: bool
    """Set it to True once the end marker arrived; ``stream_call`` then stops reading, calls
    ``finish`` and yields its events. A stream that ends while it is False is one ``ErrorEvent``
    (``… ended without <end_marker>``) and ``finish`` is never called."""

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        """The events one server-sent event completes (text deltas as they come). Raise
        ``ProviderError`` for an error the server streamed (retried when retryable and nothing has
        reached the caller yet); ``KeyError``/``TypeError``/``ValueError``/``AttributeError`` from
        a chunk of an unexpected shape become a "malformed stream" ``ErrorEvent``."""
        ...

    def finish(self) -> list[StreamEvent]:
        """After ``done``: the rest, ending in exactly one ``MessageEnd`` with the whole message."""
        ...


_PARSER_MEMBERS = ("end_marker", "done", "feed", "finish")


def _check_parser(parser: object) -> None:
    """Fail at once, naming what is missing, for a parser that is no ``StreamParser``."""
    missing = [name for name in _PARSER_MEMBERS if not hasattr(parser, name)]
    if missing:
        raise TypeError(
            f"stream_call: make_parser() gave a {type(parser).__name__} without {', '.join(missing)}; "
            "a crab_provider_kit.StreamParser has end_marker (str), done (bool, False until the end "
            "marker arrives), feed(event) and finish()"
        )


@dataclass(frozen=True)
class HttpCall:
    """One streaming POST and how to treat its failures. ``secrets`` are redacted from messages."""

    provider: str
    url: str
    headers: dict[str, str]
    body: bytes
    policy: RetryPolicy
    idle_timeout: float
    connect_timeout: float
    secrets: Sequence[str] = field(default=(), repr=False)
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT

    def clean(self, text: str) -> str:
        return Redactor(self.secrets).text(text)


@dataclass(frozen=True)
class HttpOptions:
    """Where and how a provider plugin connects: the config keys every HTTP provider shares."""

    base_url: str
    api_key_env: str
    require_key: bool = True
    key_lookup: bool = True
    max_retries: int = 3
    retry_base_delay: float = 2.0
    retry_cap: float = 60.0
    idle_timeout: float = 300.0
    connect_timeout: float = 10.0
    headers: Mapping[str, str] = field(default_factory=dict)
    request_timeout: float | None = None
    """The table's own ``request_timeout``; None takes the crab-wide value ``call`` is given."""

    @property
    def policy(self) -> RetryPolicy:
        return RetryPolicy(max_retries=self.max_retries, base_delay=self.retry_base_delay, retry_cap=self.retry_cap)

    def key_for(self, provider: str, env: Mapping[str, str] | None = None) -> str | None:
        """The key: the ``api_key_env`` variable, then the auth file (``crab.secrets.lookup_key``).

        Raises ``ConfigError`` saying what to set when a key is required and none is found. With
        ``key_lookup`` off (a custom ``base_url`` that names no ``api_key_env``) no key is sent:
        the vendor's own key must never go to another host.
        """
        if not self.key_lookup:
            if self.require_key:
                raise ConfigError(
                    f"{provider}: base_url {self.base_url} needs a key: set api_key_env in its config table"
                )
            return None
        key: str | None = lookup_key(provider, self.api_key_env, env=env)
        if self.require_key and not key:
            raise ConfigError(missing_key_message(provider, self.api_key_env))
        return key

    def call(
        self,
        provider: str,
        url: str,
        headers: dict[str, str],
        body: bytes,
        key: str | None,
        env: Mapping[str, str] | None = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> HttpCall:
        """One streaming POST with these options; the key and every known secret are redacted.

        ``request_timeout`` is the crab-wide deadline (``request_timeout_from(config)``); the
        table's own ``request_timeout``, when set, wins.
        """
        secrets = tuple(s for s in (key, *known_secrets(env=env)) if s)
        return HttpCall(
            provider=provider,
            url=url,
            headers=headers,
            body=body,
            policy=self.policy,
            idle_timeout=self.idle_timeout,
            connect_timeout=self.connect_timeout,
            secrets=secrets,
            request_timeout=self.request_timeout if self.request_timeout is not None else request_timeout,
        )


def read_http_options(table: PluginTable, *, default_base_url: str | None, default_key_env: str) -> HttpOptions:
    """The connection keys of a provider's config table, checked and typed.

    ``default_base_url`` is the vendor's own endpoint; ``None`` means the table must name one
    (a named endpoint, whose key variable and auth-file entry carry its own name). Keys are looked
    up only for the vendor's endpoint, a named endpoint, or a table that names ``api_key_env``: a
    custom ``base_url`` never receives the vendor's key. A key is required by default only for
    the vendor's endpoint or when ``api_key_env`` is named; local servers (Ollama, llama.cpp,
    vLLM) take none.
    """
    url_like = "the server's URL, like http://127.0.0.1:8080/v1"
    if default_base_url is None and "base_url" not in table.table:
        raise table.invalid("base_url", url_like, None)
    base_url = table.text("base_url", default_base_url or "").rstrip("/")
    if not base_url.startswith(("http://", "https://")):
        raise table.invalid("base_url", url_like, base_url)
    vendor = default_base_url is not None and base_url == default_base_url.rstrip("/")
    named = "api_key_env" in table.table
    key_lookup = vendor or named or default_base_url is None
    api_key_env = table.text("api_key_env", default_key_env if key_lookup else "")
    require_key = table.flag("require_key", vendor or named)
    headers = table.table.get("headers", {})
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        raise table.invalid("headers", "a table of header name to string", headers)
    return HttpOptions(
        base_url=base_url,
        api_key_env=api_key_env,
        require_key=require_key,
        key_lookup=key_lookup,
        max_retries=table.whole("max_retries", 3),
        retry_base_delay=table.number("retry_base_delay", 2.0),
        retry_cap=table.number("retry_cap", 60.0),
        idle_timeout=table.number("idle_timeout", 300.0, minimum=0.001),
        connect_timeout=table.number("connect_timeout", 10.0, minimum=0.001),
        headers={str(k): str(v) for k, v in headers.items()},
        request_timeout=table.number("request_timeout", 0.0, minimum=0.001)
        if "request_timeout" in table.table
        else None,
    )


Classify = Callable[[int, str], ProviderError]
"""Turns an error status and its body text into a typed error."""


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _redacted(error: ProviderError, call: HttpCall, suffix: str = "") -> ProviderError:
    message = call.clean(f"{error}{suffix}")
    if isinstance(error, ContextOverflowError):
        return ContextOverflowError(message)
    return ProviderError(message, error.kind, retryable=error.retryable and not suffix)


@dataclass
class _Outcome:
    retry_error: ProviderError | None = None


class _Deadline:
    """The ``request_timeout`` of one call, on the event loop's clock."""

    def __init__(self, call: HttpCall) -> None:
        self.call = call
        self.at = asyncio.get_running_loop().time() + call.request_timeout

    def left(self) -> float:
        return max(0.0, self.at - asyncio.get_running_loop().time())

    def error(self, attempts: int) -> ProviderError:
        tries = f" over {attempts} attempts" if attempts > 1 else ""
        return ProviderError(
            f"{self.call.provider}: no complete reply from {self.call.url} within request_timeout "
            f"({self.call.request_timeout:g} s{tries}); raise [crab] request_timeout to wait longer",
            "network",
            retryable=False,
        )


async def stream_call(
    call: HttpCall,
    make_parser: Callable[[], StreamParser],
    classify: Classify,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> AsyncIterator[StreamEvent]:
    """Yield the events of one model call, retrying per ``call.policy`` within ``request_timeout``.

    ``make_parser`` returns a fresh ``StreamParser`` (called once up front to check it, then
    once per attempt); ``classify(status, body)`` turns an error status and its body text into a
    ``ProviderError`` (``kind`` and ``retryable`` decide the retry; ``status_kind`` is the usual
    start). ``sleep`` waits between retries (tests pass a fake). Error statuses (after retries)
    and a passed deadline before any content are raised as ``ProviderError``
    (``ContextOverflowError`` for an overflow); faults after content has streamed end with one
    ``ErrorEvent``. Every message has ``call.secrets`` redacted.
    """
    import httpx

    _check_parser(make_parser())
    deadline = _Deadline(call)
    timeout = httpx.Timeout(
        connect=call.connect_timeout, read=call.idle_timeout, write=call.connect_timeout, pool=call.connect_timeout
    )
    async with httpx.AsyncClient(timeout=timeout) as client:
        attempt = 0
        while True:
            attempt += 1
            failure: ProviderError
            retry_after: float | None = None
            try:
                request = client.build_request("POST", call.url, headers=call.headers, content=call.body)
                response = await asyncio.wait_for(client.send(request, stream=True), deadline.left())
            except TimeoutError:
                raise _redacted(deadline.error(attempt), call) from None
            except httpx.TimeoutException as exc:
                failure = ProviderError(
                    f"{call.provider}: no response from {call.url} ({_describe(exc)})", "network", retryable=True
                )
            except httpx.TransportError as exc:
                failure = ProviderError(
                    f"{call.provider}: connection to {call.url} failed ({_describe(exc)})", "network", retryable=True
                )
            else:
                try:
                    if response.status_code >= 400:
                        try:
                            body = await asyncio.wait_for(_body_text(response), deadline.left())
                        except TimeoutError:
                            raise _redacted(deadline.error(attempt), call) from None
                        failure = classify(response.status_code, body)
                        retry_after = retry_after_from_headers(response.headers)
                    else:
                        outcome = _Outcome()
                        async for event in _read(response, make_parser(), call, outcome, classify, deadline):
                            yield event
                        if outcome.retry_error is None:
                            return
                        failure = outcome.retry_error
                finally:
                    await response.aclose()
            if not failure.retryable:
                raise _redacted(failure, call)
            decision = call.policy.decide(attempt, retry_after)
            if not decision.retry:
                raise _redacted(failure, call, f" ({decision.reason})")
            if decision.delay >= deadline.left():
                wait = f"a retry in {decision.delay:.1f} s would pass request_timeout ({call.request_timeout:g} s)"
                raise _redacted(failure, call, f" ({wait}; raise [crab] request_timeout to wait longer)")
            yield RetryEvent(
                attempt=attempt + 1,
                max_attempts=call.policy.max_attempts,
                delay=decision.delay,
                reason=call.clean(str(failure)),
            )
            await sleep(decision.delay)


async def _body_text(response: httpx.Response) -> str:
    import httpx

    try:
        return (await response.aread()).decode("utf-8", errors="replace")
    except httpx.HTTPError:
        return ""


class _Stalled(Exception):
    """No meaningful event within ``idle_timeout``, or ``request_timeout`` passed, while reading."""

    def __init__(self, limit: str) -> None:
        self.limit = limit


async def _chunks(
    response: httpx.Response, call: HttpCall, deadline: _Deadline, progress: list[float]
) -> AsyncGenerator[bytes, None]:
    """The body's chunks, each awaited no longer than both limits allow.

    ``progress[0]`` is when the last meaningful event arrived (``_read`` moves it); bytes alone,
    such as keep-alive comments, do not. Raises ``_Stalled`` naming the limit that was hit.
    """
    loop = asyncio.get_running_loop()
    chunks = response.aiter_bytes().__aiter__()
    while True:
        idle_left = progress[0] + call.idle_timeout - loop.time()
        request_left = deadline.left()
        limit = "request_timeout" if request_left <= idle_left else "idle_timeout"
        if min(idle_left, request_left) <= 0:
            raise _Stalled(limit)
        try:
            chunk = await asyncio.wait_for(chunks.__anext__(), min(idle_left, request_left))
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise _Stalled(limit) from None
        yield chunk


async def _read(
    response: httpx.Response,
    parser: StreamParser,
    call: HttpCall,
    outcome: _Outcome,
    classify: Classify,
    deadline: _Deadline,
) -> AsyncIterator[StreamEvent]:
    """Stream one response body through the parser; ends with the parser's finish or one ErrorEvent."""
    import httpx

    if response.headers.get("content-type", "").startswith("application/json"):
        # Some servers answer a streaming request with a plain JSON error and status 200.
        try:
            body = await asyncio.wait_for(_body_text(response), deadline.left())
        except TimeoutError:
            body = "(no complete body within request_timeout)"
        yield ErrorEvent(call.clean(str(classify(response.status_code, body))), "stream")
        return
    decoder = SSEDecoder()
    received = False
    dispatched = False
    yielded = False
    progress = [asyncio.get_running_loop().time()]
    chunks = _chunks(response, call, deadline, progress)
    try:
        async for chunk in chunks:
            received = received or bool(chunk)
            for sse in decoder.feed(chunk):
                dispatched = True
                if sse.event != "ping":
                    progress[0] = asyncio.get_running_loop().time()
                for event in parser.feed(sse):
                    yielded = True
                    yield event
                if parser.done:
                    break
            if parser.done:
                break
            if decoder.overflow is not None:
                yield ErrorEvent(
                    call.clean(
                        f"{call.provider}: {decoder.overflow}, more than a model server sends; partial reply dropped"
                    ),
                    "stream",
                )
                return
        if not parser.done:
            for sse in decoder.flush():
                for event in parser.feed(sse):
                    yielded = True
                    yield event
        closing = parser.finish() if parser.done else []
    except ProviderError as exc:
        if exc.retryable and not yielded:
            outcome.retry_error = exc
            return
        yield ErrorEvent(call.clean(str(exc)), exc.kind)
        return
    except _Stalled as stall:
        yield ErrorEvent(_stall_message(call, stall.limit), "stream")
        return
    except httpx.TimeoutException:
        yield ErrorEvent(_stall_message(call, "idle_timeout"), "stream")
        return
    except httpx.TransportError as exc:
        if not received:
            outcome.retry_error = ProviderError(
                f"{call.provider}: the connection dropped before any data ({_describe(exc)})", "network", True
            )
            return
        yield ErrorEvent(
            call.clean(
                f"{call.provider}: the connection dropped mid-stream ({_describe(exc)}); the partial reply was dropped"
            ),
            "stream",
        )
        return
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        # A chunk of a shape no documented server sends: end the call as an error, not a traceback.
        yield ErrorEvent(
            call.clean(
                f"{call.provider}: the server sent a malformed stream ({_describe(exc)}); partial reply dropped"
            ),
            "stream",
        )
        return
    finally:
        await chunks.aclose()
    if not parser.done:
        # Say what the server did: its status, and its own words when it wrote some outside any
        # event; a stream with no event at all is a server that failed before answering.
        said = " ".join(decoder._ignored)[:300]
        ended = f"the stream (HTTP {response.status_code}) ended without {parser.end_marker}"
        if said:
            ended += f"; the server said: {said}"
        if not dispatched and not said:
            ended += " and held no event: the server failed on this request (its own log says why)"
        else:
            ended += "; the partial reply was dropped"
        yield ErrorEvent(call.clean(f"{call.provider}: {ended}"), "stream")
        return
    for event in closing:
        yield event


def _stall_message(call: HttpCall, limit: str) -> str:
    if limit == "request_timeout":
        return (
            f"{call.provider}: the reply took longer than request_timeout ({call.request_timeout:g} s); "
            "the partial reply was dropped; raise [crab] request_timeout to allow longer replies"
        )
    return (
        f"{call.provider}: the stream went idle (nothing but keep-alives for {call.idle_timeout:g} s); "
        f"the partial reply was dropped; raise idle_timeout in the provider's config table to wait longer"
    )


def http_settings(default_base_url: str, default_key_env: str) -> tuple[Setting, ...]:
    """The connection keys of an HTTP provider's config table, for its ``crab.ConfigTable``.

    ``api_key_env`` is trust-only (it routes a key); a ``base_url`` is trust-only when combined
    with a key (``key_routing``).
    """
    return (
        Setting("base_url", "str", default_base_url, "the server's URL; a custom one gets no key unless api_key_env"),
        Setting(
            "api_key_env",
            "str",
            doc=f"variable holding the key (default {default_key_env} for the vendor's own URL)",
            trust_only=True,
        ),
        Setting("require_key", "bool", doc="fail without a key (default: for the vendor's URL or with api_key_env)"),
        Setting("max_retries", "int", 3, "retries of a failed request before any output", minimum=0),
        Setting("retry_base_delay", "float", 2.0, "seconds before the first retry (doubling)", minimum=0),
        Setting("retry_cap", "float", 60.0, "the longest wait between retries, in seconds", minimum=0),
        Setting("idle_timeout", "float", 300.0, "seconds without a server event (keep-alives don't count)", above=0),
        Setting("connect_timeout", "float", 10.0, "seconds to connect", above=0),
        Setting(
            "request_timeout", "float", doc="seconds for a whole model call, retries included (default [crab])", above=0
        ),
        Setting("headers", "table", doc="extra HTTP headers (name = value)"),
    )


def extra_body_paths(table: Mapping[str, object]) -> list[Parts]:
    """Every ``extra_body`` a provider table sets: its own and each ``models."<id>"`` entry's.

    ``extra_body`` is trust-only: fields such as ``tool_choice`` or a grammar would let a project
    dictate the tool calls a model makes, so an untrusted project's copies are dropped.
    """
    paths: list[Parts] = [("extra_body",)] if "extra_body" in table else []
    models = table.get("models")
    if isinstance(models, Mapping):
        paths += [
            ("models", str(m), "extra_body") for m, e in models.items() if isinstance(e, Mapping) and "extra_body" in e
        ]
    return paths


def key_routing(project: Mapping[str, object], trusted: Mapping[str, object]) -> list[Parts]:
    """What an untrusted project may not set in a provider table: a ``base_url`` while the user's
    layers give ``api_key_env`` or ``headers`` (the key would go to the project's host).

    ``api_key_env`` itself is a trust-only setting; this covers the combination.
    """
    if "base_url" in project and ("api_key_env" in trusted or "headers" in trusted):
        return [("base_url",)]
    return []
