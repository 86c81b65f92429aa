"""Prompt-cache billing of the fake providers, as plain state machines over request bodies and a
fake clock: Anthropic's explicit ``cache_control`` breakpoints and OpenAI's automatic prefix cache.

Tokens are counted the same way for every variant and both providers: each word (``\\w+``) and
each other non-space character of every key and string value is one token, every number, bool
and null one token, and every key/value pair one more for the JSON around it (``tokens``). Real
tokenizers differ by a few per cent; the comparison between variants does not depend on it.

Anthropic's rules, from "Prompt caching" (docs.anthropic.com/en/docs/build-with-claude/prompt-caching):
the prefix is tools, then system, then messages, block by block; a block with ``cache_control``
(a breakpoint) caches the exact prefix up to and including it; a hit is looked for at each
breakpoint and at most 20 blocks before it, the longest cached prefix winning (a marker inside a
tool result's content marks that result); a prefix under 1,024 tokens is not cached; an entry
lives 5 minutes (``ttl: "1h"``: an hour), refreshed by each hit; more than 4 breakpoints, one on
a thinking block, or a 1h one after a 5m one is a 400.
Reads bill 0.1x, writes 1.25x (2x for 1h); without markers nothing is cached.

OpenAI's, from "Prompt caching" (platform.openai.com/docs/guides/prompt-caching): automatic for
prompts of 1,024 tokens or more, the longest previously seen prefix counted in 128-token steps
from 1,024, per ``prompt_cache_key`` (and model), kept 5 minutes after its last use (24 hours with
``prompt_cache_retention: "24h"``). Cached tokens bill 0.5x here (gpt-4o's published discount;
newer models discount more: the ratio is ``OPENAI_CACHED_PRICE``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

WORD = re.compile(r"\w+|[^\w\s]")

ANTHROPIC_MINIMUM = 1024
ANTHROPIC_LOOKBACK = 20
ANTHROPIC_MAX_BREAKPOINTS = 4
ANTHROPIC_TTL = {"5m": 300.0, "1h": 3600.0}
ANTHROPIC_WRITE_PRICE = {"5m": 1.25, "1h": 2.0}
ANTHROPIC_READ_PRICE = 0.1

OPENAI_MINIMUM = 1024
OPENAI_STEP = 128
OPENAI_TTL = {"in_memory": 300.0, "24h": 86400.0}
OPENAI_CACHED_PRICE = 0.5


class FakeClock:
    """Seconds that pass only when told: a 6-minute pause costs no waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def advance(self, seconds: float) -> None:
        self.now += seconds


class RejectedRequest(Exception):
    """What the real API answers with a 400: ``message`` is its ``error.message``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def words(value: Any) -> list[str]:
    """The tokens of a JSON value, in order (see the module docstring)."""
    if isinstance(value, str):
        return WORD.findall(value)
    if isinstance(value, dict):
        out: list[str] = []
        for key, item in value.items():
            out += [*WORD.findall(key), ":", *words(item)]
        return out
    if isinstance(value, list):
        return [token for item in value for token in words(item)]
    return [json.dumps(value)]


def tokens(value: Any) -> int:
    """How many tokens ``value`` counts for (``len(words(value))``)."""
    return len(words(value))


@dataclass(frozen=True)
class Bill:
    """One request's prompt, split as the provider bills it."""

    uncached: int
    read: int = 0
    written_5m: int = 0
    written_1h: int = 0
    cached_price: float = ANTHROPIC_READ_PRICE

    @property
    def prompt(self) -> int:
        return self.uncached + self.read + self.written_5m + self.written_1h

    @property
    def written(self) -> int:
        return self.written_5m + self.written_1h

    @property
    def billed(self) -> float:
        """Input tokens at the base price: uncached x1, writes x1.25 (1h: x2), reads x the cached price."""
        return (
            self.uncached
            + self.read * self.cached_price
            + self.written_5m * ANTHROPIC_WRITE_PRICE["5m"]
            + self.written_1h * ANTHROPIC_WRITE_PRICE["1h"]
        )

    @property
    def read_share(self) -> float:
        return self.read / self.prompt if self.prompt else 0.0


@dataclass(frozen=True)
class Block:
    """One block of the cached prefix: its identity (without the marker), tokens and marker."""

    identity: str
    tokens: int
    marker: dict[str, Any] | None
    kind: str


def _block(value: dict[str, Any], extra: int = 0, role: str = "") -> Block:
    marker = value.get("cache_control")
    plain = {k: v for k, v in value.items() if k != "cache_control"}
    inner = plain.get("content")
    if plain.get("type") == "tool_result" and isinstance(inner, list):
        # A marker on a block inside a tool result ends the prefix there, at the end of the
        # result but for what follows it inside: the whole result counts as marked.
        plain["content"] = [
            {k: v for k, v in i.items() if k != "cache_control"} if isinstance(i, dict) else i for i in inner
        ]
        nested = [i["cache_control"] for i in inner if isinstance(i, dict) and isinstance(i.get("cache_control"), dict)]
        marker = marker or (nested[-1] if nested else None)
    identity = json.dumps([role, plain], sort_keys=True, ensure_ascii=False)
    return Block(
        identity, tokens(plain) + extra, marker if isinstance(marker, dict) else None, str(plain.get("type", ""))
    )


def anthropic_blocks(body: dict[str, Any]) -> list[Block]:
    """The prefix of a Messages request, in cache order: tools, system, then each message's blocks
    (a message's first block counts one more token for its role)."""
    blocks = [_block(tool, role="tool") for tool in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str) and system:
        blocks.append(_block({"type": "text", "text": system}, role="system"))
    elif isinstance(system, list):
        blocks += [_block(b, role="system") for b in system]
    for message in body.get("messages") or []:
        content = message.get("content")
        items = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        for index, item in enumerate(items):
            blocks.append(_block(item, extra=1 if index == 0 else 0, role=str(message.get("role"))))
    return blocks


@dataclass
class AnthropicCache:
    """Anthropic's prompt cache for one account: entries by exact prefix, each with its expiry."""

    clock: FakeClock
    entries: dict[str, tuple[float, str]] = field(default_factory=dict)
    """prefix hash -> (expiry, ttl name)"""

    def _alive(self, key: str) -> bool:
        entry = self.entries.get(key)
        return entry is not None and entry[0] > self.clock.now

    def bill(self, body: dict[str, Any]) -> Bill:
        """Bill one request and update the cache; ``RejectedRequest`` where the API answers 400."""
        blocks = anthropic_blocks(body)
        marked = [(i, b) for i, b in enumerate(blocks) if b.marker is not None]
        if len(marked) > ANTHROPIC_MAX_BREAKPOINTS:
            raise RejectedRequest(
                f"A maximum of {ANTHROPIC_MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marked)}."
            )
        breakpoints: list[tuple[int, str]] = []
        for index, block in marked:
            if block.kind in ("thinking", "redacted_thinking"):
                raise RejectedRequest(f"messages: cache_control cannot be set for {block.kind} blocks")
            ttl = block.marker.get("ttl", "5m") if block.marker else "5m"
            if block.marker and block.marker.get("type") != "ephemeral":
                raise RejectedRequest("cache_control.type: Input should be 'ephemeral'")
            if ttl not in ANTHROPIC_TTL:
                raise RejectedRequest(f"cache_control.ttl: Input should be '5m' or '1h', not {ttl!r}")
            if ttl == "1h" and any(t == "5m" for _, t in breakpoints):
                raise RejectedRequest("a ttl='1h' cache_control block must not come after a ttl='5m' one")
            breakpoints.append((index, ttl))
        # The model and the thinking setting are part of what a cached prefix was computed with.
        digest = hashlib.sha256(json.dumps([body.get("model"), body.get("thinking")]).encode())
        keys: list[str] = []
        totals: list[int] = []
        running = 0
        for block in blocks:
            digest.update(block.identity.encode())
            keys.append(digest.copy().hexdigest())
            running += block.tokens
            totals.append(running)
        now = self.clock.now
        hit = -1
        for point, _ in breakpoints:
            for index in range(point, max(-1, point - ANTHROPIC_LOOKBACK - 1), -1):
                if self._alive(keys[index]):
                    hit = max(hit, index)
                    expiry_ttl = self.entries[keys[index]][1]
                    self.entries[keys[index]] = (now + ANTHROPIC_TTL[expiry_ttl], expiry_ttl)
                    break
        read = totals[hit] if hit >= 0 else 0
        written = {"5m": 0, "1h": 0}
        covered = read
        for point, ttl in breakpoints:
            if point <= hit or totals[point] < ANTHROPIC_MINIMUM:
                continue
            if not self._alive(keys[point]):
                written[ttl] += totals[point] - covered
            self.entries[keys[point]] = (now + ANTHROPIC_TTL[ttl], ttl)
            covered = totals[point]
        total = totals[-1] if totals else 0
        return Bill(total - read - written["5m"] - written["1h"], read, written["5m"], written["1h"])


def openai_words(body: dict[str, Any]) -> list[str]:
    """The prompt of a chat-completions request as the cache sees it: tools, then messages."""
    out: list[str] = []
    for tool in body.get("tools") or []:
        out += words(tool)
    for message in body.get("messages") or []:
        out += words(message)
    return out


@dataclass
class OpenAICache:
    """OpenAI's automatic prefix cache: prefixes of every prompt of 1,024 tokens or more, in
    128-token steps, per cache key and model, each kept a while after its last use."""

    clock: FakeClock
    entries: dict[str, float] = field(default_factory=dict)
    """hash of (key, model, the prefix's tokens) -> expiry"""

    def bill(self, body: dict[str, Any]) -> Bill:
        prompt = openai_words(body)
        retention = body.get("prompt_cache_retention") or "in_memory"
        ttl = OPENAI_TTL.get(str(retention), OPENAI_TTL["in_memory"])
        now = self.clock.now
        digest = hashlib.sha256(json.dumps([body.get("prompt_cache_key") or "", body.get("model")]).encode())
        cached = 0
        length = 0
        missed = False
        for end in range(OPENAI_MINIMUM, len(prompt) + 1, OPENAI_STEP):
            digest.update("\x00".join(prompt[length:end]).encode() + b"\x00")
            length = end
            key = digest.copy().hexdigest()
            if not missed and self.entries.get(key, 0.0) > now:
                cached = end
            else:
                missed = True
            self.entries[key] = now + ttl
        return Bill(len(prompt) - cached, cached, cached_price=OPENAI_CACHED_PRICE)
