"""The token budget: characters / 4 times a correction learned from reported usage, each message
measured once per session, and when to compact (docs/architecture.md#what-a-model-call-costs-as-the-turn-grows).
An estimate computed from the contracts' values (requests, messages, usage), so ``_values``': the
loop's compaction step and ``crab info`` both read it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from crab._contracts.messages import AssistantMessage, Message, ToolResultMessage, Usage, UserMessage
from crab._contracts.providers import ModelRequest
from crab._contracts.tools import ToolSpec
from crab._values.message_json import extends

CHARS_PER_TOKEN = 4
DEFAULT_CONTEXT_WINDOW = 128_000
"""The window assumed when neither the config nor the provider names one."""
RATIO_RANGE = (0.25, 4.0)
MESSAGE_OVERHEAD = 4
"""Characters each message costs beyond its text (role and framing), in the raw estimate."""


IMAGE_CHARS = 1600 * CHARS_PER_TOKEN
"""What one image is counted as: about 1,600 tokens, a large image's cost at both big providers
(downscaled images cost less; the budget's learned correction absorbs the difference)."""


def message_chars(message: Message) -> int:
    """Characters ``message`` adds to a request (text, tool calls, reasoning)."""
    if isinstance(message, UserMessage):
        return len(message.content) + MESSAGE_OVERHEAD + IMAGE_CHARS * len(message.images)
    if isinstance(message, ToolResultMessage):
        size = len(message.content) + len(message.call_id) + len(message.name) + MESSAGE_OVERHEAD
        return size + IMAGE_CHARS * len(message.images)
    assert isinstance(message, AssistantMessage)
    size = len(message.content) + MESSAGE_OVERHEAD
    for call in message.tool_calls:
        size += len(call.id) + len(call.name) + len(call.raw_arguments or json.dumps(call.arguments))
    for block in message.thinking:
        size += len(block.text) + len(block.signature or "")
    return size


def spec_chars(spec: ToolSpec) -> int:
    """Characters one tool description adds (name, description and JSON schema)."""
    return len(spec.name) + len(spec.description) + len(json.dumps(spec.parameters, separators=(",", ":")))


def raw_tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


def request_tokens(request: ModelRequest) -> int:
    """The uncorrected estimate of ``request``: its characters / 4."""
    chars = len(request.system) + sum(message_chars(m) for m in request.messages)
    chars += sum(spec_chars(s) for s in request.tools)
    return raw_tokens(chars)


def schema_tokens(specs: tuple[ToolSpec, ...] | list[ToolSpec]) -> int:
    """The estimated tokens of tool descriptions alone."""
    return raw_tokens(sum(spec_chars(s) for s in specs))


def reported_input(usage: Usage) -> int:
    """Every input token a provider reported (crab's ``Usage`` keeps cached ones apart)."""
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens


@dataclass
class TokenBudget:
    """One session's window, threshold and learned correction.

    The correction is the last call's reported input tokens / its estimate, within
    ``RATIO_RANGE``. The window is ``[crab] context_window``, else the provider's
    ``ModelInfo.context_window``, else ``DEFAULT_CONTEXT_WINDOW``; compaction starts once a request
    would pass ``compact_at`` of it. It keeps the last request's measured messages and checks the
    next starts with them, so an estimate costs the new messages, not the whole turn.
    """

    window: int
    compact_at: float = 0.8
    ratio: float = 1.0
    held_until: int = 0
    """After a compaction that did nothing or failed, the next try waits until requests grow past this."""
    _messages: tuple[Message, ...] = field(default=(), repr=False, compare=False)
    _message_chars: int = field(default=0, repr=False, compare=False)
    _tools: tuple[ToolSpec, ...] = field(default=(), repr=False, compare=False)
    _tool_chars: int = field(default=0, repr=False, compare=False)

    @property
    def threshold(self) -> int:
        """Estimated request tokens above which history is compacted first."""
        return int(self.window * self.compact_at)

    def raw(self, request: ModelRequest) -> int:
        """``request_tokens(request)``, measuring only the messages the last request lacked."""
        messages, known = request.messages, self._messages
        if messages is not known:
            if extends(messages, known):
                self._message_chars += sum(map(message_chars, messages[len(known) :]))
            else:
                self._message_chars = sum(map(message_chars, messages))
            self._messages = messages
        if request.tools is not self._tools and request.tools != self._tools:
            self._tool_chars = sum(map(spec_chars, request.tools))
        self._tools = request.tools
        return raw_tokens(len(request.system) + self._message_chars + self._tool_chars)

    def estimate(self, request: ModelRequest) -> int:
        return int(self.raw(request) * self.ratio)

    def over(self, request: ModelRequest) -> bool:
        """Whether ``request`` should be compacted first: past the threshold, and past where the
        last attempt that could not compact left off (so a failing summary is not retried on
        every call)."""
        estimate = self.estimate(request)
        return estimate > self.threshold and estimate > self.held_until

    def hold(self, request: ModelRequest) -> None:
        """A compaction did nothing: try again once requests are a tenth larger."""
        self.held_until = int(self.estimate(request) * 1.1)

    def learn(self, request: ModelRequest, usage: Usage | None) -> None:
        """Correct later estimates by what the provider reported for ``request``."""
        if usage is None:
            return
        reported, raw = reported_input(usage), self.raw(request)
        if reported <= 0 or raw <= 0:
            return
        low, high = RATIO_RANGE
        self.ratio = min(high, max(low, reported / raw))

    def overflowed(self, request: ModelRequest) -> None:
        """The provider refused ``request`` as too long: the window is at most its estimated size,
        so the threshold (and what compaction keeps) shrinks to match."""
        size = self.estimate(request)
        if 0 < size < self.window:
            self.window = size
