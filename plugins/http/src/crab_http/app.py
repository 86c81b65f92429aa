"""The ASGI app: crab's own session API, the OpenAI-compatible API and the web page.

Every request's ``Host`` must name this server first (``HostGuard``, ``crab_http.hosts``: against
DNS rebinding); then every ``/v1/`` request passes ``Guard`` (a plain ASGI middleware): a bearer
token of ``crab http token create``, the token's rate limit, and the body size cap, read whole
before any handler runs, so a refused request costs nothing and stores nothing. Each refusal is one
warning line (``http: 401 POST /v1/… from 127.0.0.1: …``), never the token. The page and its
assets under ``/`` hold no data and need no token (a browser cannot send one to load a page);
the page asks for the token and sends it on every API call.
"""

from __future__ import annotations

import asyncio
import functools
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from importlib import resources
from typing import TYPE_CHECKING, Any

import crab
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from crab_http import openai_compat as oa
from crab_http.channel import STOPPING, Busy
from crab_http.hosts import HostCheck
from crab_http.limits import RateLimiter

if TYPE_CHECKING:
    from crab_http.channel import HttpChannel
    from crab_http.conversations import Conversation

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Handler = Callable[["HttpChannel", Request], Awaitable[Response]]

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
NO_RETRY = {"x-should-retry": "false"}
"""On an OpenAI-API error for a turn that ran: the official SDKs then do not send it again."""
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
ASSETS = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}


def build_app(channel: HttpChannel) -> Starlette:
    routes = [
        _route("/v1/models", models, channel, "GET"),
        _route("/v1/chat/completions", chat_completions, channel, "POST"),
        _route("/v1/sessions", list_sessions, channel, "GET"),
        _route("/v1/sessions", create_session, channel, "POST"),
        _route("/v1/sessions/{id}", get_session, channel, "GET"),
        _route("/v1/sessions/{id}/messages", post_message, channel, "POST"),
        _route("/v1/sessions/{id}/abort", abort, channel, "POST"),
        _route("/v1/sessions/{id}/permissions/{request}", permission, channel, "POST"),
        _route("/v1/sessions/{id}/questions/{request}", question, channel, "POST"),
    ]
    if channel.settings.web:
        routes += [Route("/", page, methods=["GET"]), Route("/assets/{name}", asset, methods=["GET"])]
    middleware = [Middleware(Guard, channel=channel)]
    if channel.settings.cors_origins:
        middleware.insert(
            0,  # a preflight carries no token: CORS answers it before the Guard asks for one
            Middleware(
                CORSMiddleware,
                allow_origins=list(channel.settings.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type", oa.CONVERSATION_HEADER],
            ),
        )
    middleware.insert(0, Middleware(HostGuard, channel=channel))
    return Starlette(routes=routes, middleware=middleware)


def _route(path: str, handler: Handler, channel: HttpChannel, method: str) -> Route:
    return Route(path, functools.partial(_safe, handler, channel), methods=[method])


async def _safe(handler: Handler, channel: HttpChannel, request: Request) -> Response:
    """A handler's unexpected failure: one warning line and a 500, never a traceback."""
    try:
        return await handler(channel, request)
    except Exception as exc:
        log(channel, f"http: 500 {request.method} {request.url.path}: {type(exc).__name__}: {exc}")
        return JSONResponse(oa.error_body("internal error (see the server's log)", "server_error"), 500)


# --- the guard ------------------------------------------------------------------------------


class HostGuard:
    """The outermost layer: every request (the page's, a CORS preflight) must name this server in
    its ``Host`` (``crab_http.hosts``), or it is a 400 and one warning line."""

    def __init__(self, app: ASGIApp, channel: HttpChannel) -> None:
        self.app = app
        self.channel = channel
        self.hosts = HostCheck(channel.settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == b"host"), None)
            if not self.hosts.allowed(host):
                shown = crab.messages.json_text((host or "")[:80])  # quoted, escaped and bounded: it is the client's
                reason = f"Host {shown} is not this server's name (add it to [plugins.http] allowed_hosts)"
                await refuse(self.channel, scope, send, 400, reason)
                return
        await self.app(scope, receive, send)


class Guard:
    """Bearer token, rate limit and body cap for every ``/v1/`` request (see the module docstring)."""

    def __init__(self, app: ASGIApp, channel: HttpChannel) -> None:
        self.app = app
        self.channel = channel
        self.limiter = RateLimiter(channel.settings.rate_limit)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        scheme, _, token = headers.get("authorization", "").partition(" ")
        token = token.strip()
        name = self.channel.who(token) if scheme.lower() == "bearer" and token else None
        if name is None:
            reason = "no bearer token" if not token else "an unknown or revoked token"
            await self.refuse(scope, send, 401, reason, {"WWW-Authenticate": 'Bearer realm="crab"'})
            return
        if not self.limiter.allow(name):
            wait = self.limiter.retry_after(name)
            await self.refuse(scope, send, 429, f"token {name!r} is over its rate limit", {"Retry-After": str(wait)})
            return
        cap = self.channel.settings.max_request_bytes
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            await self.refuse(scope, send, 413, f"a {declared}-byte body is over max_request_bytes ({cap})")
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = bool(message.get("more_body"))
            if len(body) > cap:
                await self.refuse(scope, send, 413, f"the body is over max_request_bytes ({cap})")
                return
        scope.setdefault("state", {})["crab_owner"] = name
        scope["state"]["crab_token"] = token
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def refuse(
        self, scope: Scope, send: Send, status: int, reason: str, headers: dict[str, str] | None = None
    ) -> None:
        await refuse(self.channel, scope, send, status, reason, headers)


async def refuse(
    channel: HttpChannel, scope: Scope, send: Send, status: int, reason: str, headers: dict[str, str] | None = None
) -> None:
    """Answer ``status`` before any handler runs, with one warning line (never the token)."""
    client = scope.get("client") or ("?", 0)
    log(channel, f"http: {status} {scope.get('method')} {scope.get('path')} from {client[0]}: {reason}")
    kinds = {401: "authentication_error", 413: "request_too_large", 429: "rate_limit_error"}
    response = JSONResponse(oa.error_body(reason, kinds.get(status, "invalid_request_error")), status, headers)
    await response(scope, _drain_nothing, send)


async def _drain_nothing() -> Message:
    return {"type": "http.disconnect"}


def log(channel: HttpChannel, line: str) -> None:
    if channel.handle is not None:
        channel.handle.notice(line, "warning")


def owner(request: Request) -> str:
    return str(request.scope["state"]["crab_owner"])


def token(request: Request) -> str:
    return str(request.scope["state"]["crab_token"])


def problem(channel: HttpChannel, request: Request, status: int, message: str) -> JSONResponse:
    if status in (400, 403, 409, 422, 503):
        log(channel, f"http: {status} {request.method} {request.url.path} from {_client(request)}: {message}")
    return JSONResponse(oa.error_body(message), status)


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"


async def json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise oa.Invalid(f"the body is not JSON: {exc}") from None
    except RecursionError:
        # json's decoder recurses once per level: ``[`` x 100,000 fits any body cap
        raise oa.Invalid("the body is not JSON crab reads: it nests too deeply") from None


def sse(data: Any) -> bytes:
    return f"data: {crab.messages.json_text(data)}\n\n".encode()


# --- crab's own API -------------------------------------------------------------------------


async def list_sessions(channel: HttpChannel, request: Request) -> Response:
    return JSONResponse({"sessions": channel.listed(owner(request))})


async def create_session(channel: HttpChannel, request: Request) -> Response:
    try:
        body = await json_body(request)
        title = body.get("title", "") if isinstance(body, dict) else None
        if not isinstance(title, str) or len(title) > 200:
            raise oa.Invalid('"title" must be a string of at most 200 characters')
    except oa.Invalid as exc:
        return problem(channel, request, 422, str(exc))
    if channel.stopping:  # draining: a session made now could never run a turn here
        return problem(channel, request, 503, STOPPING)
    conversation = await channel.open(owner(request), title=channel.clean_input(title, token(request)))
    return JSONResponse(_session_json(conversation, with_messages=False), 201)


async def _conversation(channel: HttpChannel, request: Request) -> Conversation | None:
    return await channel.find(owner(request), request.path_params["id"])


def _session_json(conversation: Conversation, *, with_messages: bool = True) -> dict[str, Any]:
    info = conversation.session.info
    data: dict[str, Any] = {
        "id": conversation.session.id,
        "title": conversation.title or info.title,
        "created": info.created,
        "busy": conversation.busy,
    }
    if with_messages:
        data["messages"] = [crab.messages.message_to_dict(m) for m in conversation.session.messages]
    return data


async def get_session(channel: HttpChannel, request: Request) -> Response:
    conversation = await _conversation(channel, request)
    if conversation is None:
        return problem(channel, request, 404, "no such session")
    return JSONResponse(_session_json(conversation))


async def post_message(channel: HttpChannel, request: Request) -> Response:
    # Everything that can refuse the message is checked before the session is looked up: finding
    # one that is not live resumes it and keeps it for the life of the process.
    try:
        body = await json_body(request)
        text = body.get("text") if isinstance(body, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise oa.Invalid('the body must be {"text": "…"} with some text')
    except oa.Invalid as exc:
        return problem(channel, request, 422, str(exc))
    text = channel.clean_input(text, token(request))
    refused = _refusal(channel, request, text)
    if refused is not None:
        return refused
    conversation = await _conversation(channel, request)
    if conversation is None:
        return problem(channel, request, 404, "no such session")
    try:
        queue = channel.start_turn(conversation, text)
    except Busy as exc:
        return problem(channel, request, 409, str(exc))
    except crab.ChannelError as exc:
        return problem(channel, request, 503, str(exc))

    async def events() -> AsyncIterator[bytes]:
        async for item in channel.stream(conversation, queue):
            yield b": ping\n\n" if item is None else sse(item)

    return StreamingResponse(events(), media_type="text/event-stream", headers=SSE_HEADERS)


def _refusal(channel: HttpChannel, request: Request, text: str) -> Response | None:
    """The answer to a message refused whatever its session: ``!shell`` input, or a draining server."""
    if text.startswith("!"):
        return problem(channel, request, 403, "!shell input is refused over HTTP (a remote channel)")
    if channel.stopping:
        return problem(channel, request, 503, STOPPING)
    return None


async def abort(channel: HttpChannel, request: Request) -> Response:
    conversation = await _conversation(channel, request)
    if conversation is None:
        return problem(channel, request, 404, "no such session")
    return JSONResponse({"aborted": channel.abort(conversation)})


async def permission(channel: HttpChannel, request: Request) -> Response:
    conversation = await _conversation(channel, request)
    if conversation is None:
        return problem(channel, request, 404, "no such session")
    try:
        body = await json_body(request)
        answer = body.get("answer") if isinstance(body, dict) else None
        if answer not in ("once", "always", "deny"):
            raise oa.Invalid('the body must be {"answer": "once" | "always" | "deny"}')
    except oa.Invalid as exc:
        return problem(channel, request, 422, str(exc))
    if not channel.answer(conversation, request.path_params["request"], str(answer)):
        return problem(channel, request, 404, "this question is not open (answered, timed out, or never asked)")
    return JSONResponse({"answer": answer})


async def question(channel: HttpChannel, request: Request) -> Response:
    """The answer to a tool's question (``question`` event): a choice, its number, or words
    where the question takes them; one that is no answer is a 422 and the question stays open."""
    conversation = await _conversation(channel, request)
    if conversation is None:
        return problem(channel, request, 404, "no such session")
    try:
        body = await json_body(request)
        typed = body.get("answer") if isinstance(body, dict) else None
        if not isinstance(typed, str):
            raise oa.Invalid('the body must be {"answer": "<a choice, its number, or your words>"}')
    except oa.Invalid as exc:
        return problem(channel, request, 422, str(exc))
    taken = channel.answer_question(conversation, request.path_params["request"], typed)
    if taken is False:
        return problem(channel, request, 404, "this question is not open (answered, timed out, or never asked)")
    if taken is None:
        return problem(channel, request, 422, "that is not an answer to this question: pick one of its choices")
    return JSONResponse({"answer": taken})


# --- the OpenAI-compatible API --------------------------------------------------------------


def _model(channel: HttpChannel) -> str:
    handle = channel.handle
    return f"{handle.provider_name}/{handle.model}" if handle is not None else "crab"


async def models(channel: HttpChannel, request: Request) -> Response:
    return JSONResponse(oa.models_list(_model(channel)))


async def chat_completions(channel: HttpChannel, request: Request) -> Response:
    try:
        body = await json_body(request)
        key, text, streaming, _ = oa.parse_request(body, request.headers.get(oa.CONVERSATION_HEADER))
    except oa.Invalid as exc:
        return problem(channel, request, 422, str(exc))
    # Checked before the conversation is opened: opening one stores a session and keeps it.
    refused = _refusal(channel, request, channel.clean_input(text, token(request)))
    if refused is not None:
        return refused
    conversation = await channel.open(owner(request), key, kind="openai")
    if key is None or not conversation.session.messages:
        text = oa.transcript(body["messages"])
    text = channel.clean_input(text, token(request))
    try:
        queue = channel.start_turn(conversation, text)
    except Busy as exc:
        return problem(channel, request, 409, str(exc))
    except crab.ChannelError as exc:  # the drain began while the conversation was opened
        await channel.dismiss(conversation)
        return problem(channel, request, 503, str(exc))
    model = _model(channel)
    if streaming:
        return StreamingResponse(
            _chunks(channel, conversation, queue, model), media_type="text/event-stream", headers=SSE_HEADERS
        )
    end: dict[str, Any] = {}

    async def watch() -> None:
        """A client that leaves while it waits for the whole answer (the body was read)."""
        while (await request.receive())["type"] != "http.disconnect":
            pass
        channel.left(conversation, queue)

    watcher = asyncio.create_task(watch())
    answer = oa.Answer()
    try:
        async for item in channel.stream(conversation, queue):
            if item is None:
                continue
            answer.feed(item)
            if item.get("type") == "turn_end":
                end = item
            elif item.get("type") == "command_output":
                end = {"stop": "end", "turn_id": secrets.token_hex(6)}
    finally:
        watcher.cancel()
    # The official SDKs retry a 5xx twice unless told not to: that would run the turn again and
    # record its prompt again (crab retried the model call itself already).
    if end.get("stop") == "error" or not end:
        message = str(end.get("error") or "the turn ended without an answer")
        return JSONResponse(oa.error_body(message, "server_error"), 502, headers=NO_RETRY)
    if end.get("stop") == "aborted":  # half an answer must not read as a whole one
        return JSONResponse(oa.error_body(oa.ABORTED, "server_error"), 503, headers=NO_RETRY)
    return JSONResponse(
        oa.completion(str(end.get("turn_id")), model, answer.text, end.get("usage"), oa.finish_reason(end.get("stop")))
    )


async def _chunks(channel: HttpChannel, conversation: Conversation, queue: Any, model: str) -> AsyncIterator[bytes]:
    turn_id = secrets.token_hex(6)  # a command has no turn: its chunks still share one id
    began = ended = False
    answer = oa.Answer()
    async for item in channel.stream(conversation, queue):
        if item is None:
            yield b": ping\n\n"
            continue
        kind = item.get("type")
        if kind == "turn_start":
            turn_id = str(item.get("turn_id"))
        if not began and kind in ("turn_start", "text_delta", "command_output", "turn_end"):
            began = True
            yield sse(oa.chunk(turn_id, model, {"role": "assistant", "content": ""}))
        text = answer.feed(item)
        if text:
            yield sse(oa.chunk(turn_id, model, {"content": text}))
        if kind == "turn_end":
            ended = True
            if item.get("stop") == "error":
                yield sse(oa.error_body(str(item.get("error") or "the turn failed"), "server_error"))
            elif item.get("stop") == "aborted":  # no finish_reason: the text so far is not the answer
                yield sse(oa.error_body(oa.ABORTED, "server_error"))
            else:
                done = oa.chunk(turn_id, model, {}, oa.finish_reason(item.get("stop")))
                done["usage"] = oa.usage_of(item.get("usage"))
                yield sse(done)
    if began and not ended:
        yield sse(oa.chunk(turn_id, model, {}, "stop"))
    yield b"data: [DONE]\n\n"


# --- the web page ---------------------------------------------------------------------------


def _read_asset(name: str) -> bytes:
    return resources.files("crab_http").joinpath("web", name).read_bytes()


async def page(request: Request) -> Response:
    return Response(_read_asset("index.html"), media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in ASSETS:
        return Response("not found", 404)
    return Response(
        _read_asset(name),
        media_type=ASSETS[name],
        headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
    )
