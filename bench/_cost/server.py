"""The fake model endpoints on 127.0.0.1: Anthropic's Messages API and OpenAI's chat completions,
streamed as the real APIs stream them (the wire formats of crab-provider-anthropic's and
crab-provider-openai's recorded fixtures), replying from a ``Script`` and billing by ``billing``."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .billing import AnthropicCache, Bill, FakeClock, OpenAICache, RejectedRequest, tokens
from .script import SUMMARISE, SUMMARY, Script, Step

SECONDS_PER_REQUEST = 3.0
"""Fake time one model call takes (a session's requests stay well inside a 5-minute TTL)."""


@dataclass(frozen=True)
class Record:
    """What one request cost, and which part of the script it was."""

    provider: str
    kind: str  # "step", "summary" or "rejected"
    bill: Bill
    tools: str  # hash of the tools array (markers left out)
    system: str  # hash of the system prompt (markers left out)
    detail: str = ""
    tools_tokens: int = 0
    expected_miss: bool = False
    """The first request after a compaction or after a pause longer than a cache's TTL: the
    issue's target (90% read from cache) leaves these out."""


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def _unmarked(items: Any) -> list[Any]:
    """``items`` (tools or system blocks) without their cache markers: a moved marker is no change."""
    return [{k: v for k, v in i.items() if k != "cache_control"} if isinstance(i, dict) else i for i in items or []]


def _text_of(block: Any) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, dict) and block.get("type") == "text":
        return str(block.get("text", ""))
    return ""


def place_anthropic(body: dict[str, Any], script: Script) -> int | str | None:
    """The step this Messages request asks for, ``"summary"``, or None when it has no place."""
    system = body.get("system")
    system_text = system if isinstance(system, str) else "".join(_text_of(b) for b in system or [])
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content")
    blocks = [content] if isinstance(content, str) else list(content or [])
    if last.get("role") != "user" or not blocks:
        return None
    if script.asks_for_summary(_text_of(blocks[-1])) or SUMMARISE.search(system_text[:200]):
        return "summary"
    for block in reversed(blocks):
        if isinstance(block, dict) and block.get("type") == "tool_result":
            return script.after_result(str(block.get("tool_use_id", "")))
        found = script.for_prompt(_text_of(block))
        if found is not None:
            return found
    return None


def place_openai(body: dict[str, Any], script: Script) -> int | str | None:
    """The step this chat-completions request asks for, ``"summary"``, or None."""
    messages = body.get("messages") or []
    if not messages:
        return None
    system = messages[0].get("content") if messages[0].get("role") == "system" else ""
    last = messages[-1]
    content = last.get("content")
    last_text = content if isinstance(content, str) else "".join(_text_of(b) for b in content or [])
    if (last.get("role") == "user" and script.asks_for_summary(last_text)) or SUMMARISE.search(str(system)[:200]):
        return "summary"
    for message in reversed(messages):
        if message.get("role") == "tool":
            return script.after_result(str(message.get("tool_call_id", "")))
        if message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else "".join(_text_of(b) for b in content or [])
            found = script.for_prompt(text)
            if found is not None:
                return found
        if message.get("role") == "assistant":
            return None
    return None


def _sse(event: str | None, data: dict[str, Any] | str) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def anthropic_stream(reply: Step, step: int, model: str, bill: Bill, output: int) -> list[bytes]:
    """The SSE events of one Messages reply (message_start … message_stop)."""
    usage = {
        "input_tokens": bill.uncached,
        "cache_creation_input_tokens": bill.written,
        "cache_read_input_tokens": bill.read,
        "cache_creation": {"ephemeral_5m_input_tokens": bill.written_5m, "ephemeral_1h_input_tokens": bill.written_1h},
        "output_tokens": 1,
    }
    message = {"id": f"msg_bench_{step}", "type": "message", "role": "assistant", "content": [], "model": model}
    events = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {**message, "stop_reason": None, "stop_sequence": None, "usage": usage},
            },
        )
    ]
    index = 0
    if reply.text:
        events.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
        )
        events.append(
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": reply.text}},
            )
        )
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    for number, (name, arguments) in enumerate(reply.calls):
        block = {"type": "tool_use", "id": f"toolu_bench_{step:03d}_{number}", "name": name, "input": {}}
        events.append(
            _sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
        )
        delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
        events.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    stop = "tool_use" if reply.calls else "end_turn"
    events.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": output},
            },
        )
    )
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


def openai_stream(reply: Step, step: int, model: str, bill: Bill, output: int, usage: bool) -> list[bytes]:
    """The SSE chunks of one chat-completions reply, the usage chunk when asked for, then [DONE]."""
    head = {"id": f"chatcmpl-bench{step}", "object": "chat.completion.chunk", "created": 1732000000, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            None,
            {
                **head,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
                "usage": None,
            },
        )

    events = [chunk({"role": "assistant", "content": ""})]
    if reply.text:
        events.append(chunk({"content": reply.text}))
    for number, (name, arguments) in enumerate(reply.calls):
        first = {
            "index": number,
            "id": f"call_bench_{step:03d}_{number}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [first]}))
        events.append(chunk({"tool_calls": [{"index": number, "function": {"arguments": json.dumps(arguments)}}]}))
    events.append(chunk({}, "tool_calls" if reply.calls else "stop"))
    if usage:
        details = {"prompt_tokens_details": {"cached_tokens": bill.read, "audio_tokens": 0}}
        totals = {"prompt_tokens": bill.prompt, "completion_tokens": output, "total_tokens": bill.prompt + output}
        events.append(_sse(None, {**head, "choices": [], "usage": {**totals, **details}}))
    events.append(_sse(None, "[DONE]"))
    return events


@dataclass
class FakeProviders:
    """Both fake endpoints, one fake clock and one cache each; ``reset`` before every session."""

    script: Script
    clock: FakeClock = field(default_factory=FakeClock)
    records: list[Record] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.anthropic = AnthropicCache(self.clock)
        self.openai = OpenAICache(self.clock)
        self.lock = threading.Lock()
        self.paused = False
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with provider.lock:
                    status, events = provider.answer(self.path, body)
                self.send_response(status)
                if status != 200:
                    data = events[0]
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for event in events:
                    self.wfile.write(event)
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reset(self, script: Script) -> None:
        with self.lock:
            self.script = script
            self.clock = FakeClock()
            self.anthropic = AnthropicCache(self.clock)
            self.openai = OpenAICache(self.clock)
            self.records = []
            self.paused = False

    def pause(self, seconds: float) -> None:
        """The user is away ``seconds`` (fake time) before the next prompt."""
        with self.lock:
            self.clock.advance(seconds)
            self.paused = self.paused or seconds > 0

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _reject(self, provider: str, message: str) -> tuple[int, list[bytes]]:
        self.records.append(Record(provider, "rejected", Bill(0), "", "", message))
        if provider == "anthropic":
            error: dict[str, Any] = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        else:
            error = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
        return 400, [json.dumps(error).encode()]

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, list[bytes]]:
        """The status and the bytes of the answer to one request (under ``lock``)."""
        provider = "anthropic" if path.endswith("/messages") else "openai" if path.endswith("/chat/completions") else ""
        if not provider:
            return self._reject("openai", f"bench: no endpoint {path}")
        place = (place_anthropic if provider == "anthropic" else place_openai)(body, self.script)
        if place is None or (isinstance(place, int) and place >= len(self.script.steps)):
            return self._reject(provider, "bench: this request has no place in the script")
        try:
            bill = (self.anthropic if provider == "anthropic" else self.openai).bill(body)
        except RejectedRequest as exc:
            return self._reject(provider, exc.message)
        self.clock.advance(SECONDS_PER_REQUEST)
        if provider == "anthropic":
            system: Any = body.get("system")
            tools: Any = body.get("tools")
        else:
            messages = body.get("messages") or [{}]
            system = messages[0].get("content") if messages[0].get("role") == "system" else None
            tools = body.get("tools")
        system_key = _digest(_unmarked(system) if isinstance(system, list) else system)
        kind = "summary" if place == "summary" else "step"
        reply = Step(SUMMARY) if place == "summary" else self.script.steps[int(place)]
        step = 999 if place == "summary" else int(place)  # 999: no call ids in a summary anyway
        after_summary = bool(self.records) and self.records[-1].kind == "summary"
        expected_miss = kind == "step" and (self.paused or after_summary)
        self.paused = False
        tools_key, tools_tokens = _digest(_unmarked(tools)), tokens(_unmarked(tools))
        self.records.append(
            Record(provider, kind, bill, tools_key, system_key, str(place), tools_tokens, expected_miss)
        )
        output = tokens(reply.text) + sum(tokens(a) + 1 for _, a in reply.calls)
        model = str(body.get("model", ""))
        if provider == "anthropic":
            return 200, anthropic_stream(reply, step, model, bill, output)
        include = bool((body.get("stream_options") or {}).get("include_usage"))
        return 200, openai_stream(reply, step, model, bill, output, include)
