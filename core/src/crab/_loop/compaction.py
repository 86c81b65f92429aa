"""Compaction, the step: older history summarised by the model into one ``handoff`` anchor carrying
the kept tail, the full history staying in the store before it; part of the loop, not a plugin
(docs/architecture.md#loop-features-as-plugins). The summary is asked for on the session's own
request (its cached prefix) with one instruction appended; only a request that no longer fits
the window is summarised from a transcript instead. Its prompts, transcript and anchor payload are
``crab._values.compaction_text``, and so is which messages it keeps (``split``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from crab._contracts.errors import CrabError, PluginError, ProviderError
from crab._contracts.events import CompactionEvent, Event
from crab._contracts.messages import AssistantMessage, Message, Usage, UserMessage
from crab._contracts.providers import ModelRequest
from crab._contracts.tools import Tool
from crab._values.budget import CHARS_PER_TOKEN, TokenBudget, message_chars, raw_tokens
from crab._values.compaction_text import (
    INSTRUCTION,
    SYSTEM,
    anchor_payload,
    carried,
    chunks,
    keep_tokens,
    previous_summary,
    split,
    summary_limit,
    summary_request,
    transcript_blocks,
)

if TYPE_CHECKING:
    from crab._loop.model_call import ModelCalls
    from crab._loop.session import Session

CompactionReason = Literal["threshold", "overflow", "manual"]


@dataclass(frozen=True)
class Summary:
    """What the model wrote, and the usage each call reported (one entry per call)."""

    text: str
    usages: list[Usage]


@dataclass(frozen=True)
class Compacted:
    """One compaction done: how many messages were summarised and kept, and what it cost."""

    summarised: int
    kept: int
    usage: Usage


Send = Callable[[ModelRequest], Awaitable[AssistantMessage]]


async def summarise_in_place(prefix: ModelRequest, *, focus: str | None, window: int, send: Send) -> Summary:
    """The model's summary of the conversation ``prefix`` (the session's next request) holds: the
    same system prompt, tools and messages, so a provider's prompt cache serves all of it, and
    ``INSTRUCTION`` (with the user's ``focus``) as a final user message, the output bounded."""
    instruction = f"{INSTRUCTION}\n\nThe user asks the summary to focus on: {focus}" if focus else INSTRUCTION
    request = replace(prefix, messages=(*prefix.messages, UserMessage(instruction)), max_tokens=summary_limit(window))
    message = await send(request)
    text = message.content.strip()
    if not text:
        raise ProviderError("the model returned an empty summary", "invalid_request")
    return Summary(text, [message.usage] if message.usage is not None else [])


async def summarise(
    messages: Sequence[Message],
    *,
    previous: str | None,
    focus: str | None,
    window: int,
    base: ModelRequest,
    send: Send,
) -> Summary:
    """The model's summary of ``messages`` (after ``previous``, an earlier summary).

    ``base`` gives the model and sampling options; ``send`` makes one model call and returns the
    reply (raising ``ProviderError`` when the call fails), which is priced and recorded there.
    """
    limit_tokens = summary_limit(window)
    room = max(1000, (window // 2 - limit_tokens) * CHARS_PER_TOKEN)
    usages: list[Usage] = []
    summary = previous
    for chunk in chunks(transcript_blocks(messages), room):
        request = ModelRequest(
            model=base.model,
            system=SYSTEM,
            messages=(UserMessage(summary_request(chunk, summary, focus)),),
            max_tokens=limit_tokens,
            temperature=base.temperature,
        )
        message = await send(request)
        if message.usage is not None:
            usages.append(message.usage)
        text = message.content.strip()
        if not text:
            raise ProviderError("the model returned an empty summary", "invalid_request")
        summary = text
    return Summary(summary or "", usages)


async def compact(
    session: Session,
    reason: CompactionReason,
    focus: str | None,
    *,
    budget: TokenBudget,
    calls: ModelCalls,
    base: ModelRequest,
    tools: Mapping[str, Tool] | None = None,
) -> Compacted | None:
    """Summarise older history of ``session`` into a compaction anchor, keep the recent turns.

    The caller holds ``session.compacting``. ``base`` is the session's next request before the
    ``crab_before_model_call`` hooks (system prompt, every tool's spec, the messages, the
    sampling options) and ``tools`` the registry, as a turn gives them to ``ModelCalls.prepare``:
    the summary request is that request plus ``INSTRUCTION`` (``summarise_in_place``), so it
    reuses the cached prefix. After an overflow, or when that request does not fit, the older
    messages are summarised from a transcript under ``SYSTEM`` (``summarise``).
    None when there was nothing older to summarise or the summary failed (a ``CompactionEvent``
    with ``phase="failed"`` says why; by hand, ``manual``, nothing to summarise is no failure and
    has no event). Raises only on cancellation (or ``PluginError`` in strict mode).
    """

    def emit(event: Event) -> None:
        calls.emit(event, session.id)

    messages = list(session.messages)
    history_tokens = raw_tokens(sum(message_chars(m) for m in messages))
    cut = split(messages, keep_tokens(reason, budget.threshold, history_tokens))
    before = int(history_tokens * budget.ratio)
    if cut == 0:
        if reason == "manual":
            return None  # harmless, nothing failed: the caller (/compact) says "nothing to compact yet"
        why = "nothing older than the most recent turn to summarise"
        emit(CompactionEvent(session.id, "failed", reason, tokens_before=before, error=why))
        return None
    older, kept = messages[:cut], messages[cut:]
    emit(CompactionEvent(session.id, "start", reason, len(older), len(kept), before))

    async def send(request: ModelRequest) -> AssistantMessage:
        request = await calls.prepare(session, request, tools)
        reply = await calls.send(session, request, purpose="compaction")
        if reply.message.stop_reason == "error":
            raise ProviderError(reply.message.error or "the summary call failed", reply.error_kind or "unknown")
        return reply.message

    async def transcript() -> Summary:
        previous = previous_summary(session.handoff)
        plain = replace(base, system="", tools=())  # the transcript path sends neither
        return await summarise(older, previous=previous, focus=focus, window=budget.window, base=plain, send=send)

    try:
        if reason == "overflow" or not base.messages:
            summary = await transcript()
        else:
            try:
                summary = await summarise_in_place(base, focus=focus, window=budget.window, send=send)
            except ProviderError as exc:
                if exc.kind != "context_overflow":
                    raise
                summary = await transcript()
    except (asyncio.CancelledError, KeyboardInterrupt, PluginError):
        raise
    except Exception as exc:  # a provider failing in any way leaves the history as it was
        error = str(exc) if isinstance(exc, CrabError) else f"{type(exc).__name__}: {exc}"
        emit(CompactionEvent(session.id, "failed", reason, tokens_before=before, error=error))
        return None
    total = Usage()
    for usage in summary.usages:
        total = total + usage
    payload = anchor_payload(
        summary.text,
        kept,
        reason=reason,
        focus=focus,
        summarised=len(older),
        tools=[],  # no tool is expanded per turn any more (the tool view's lists are constant)
        tokens_before=before,
    )
    await calls.append_entry(session, "anchor", payload)
    budget.held_until = 0
    session.handoff = payload
    session.messages = carried(payload)[0]
    after = int(raw_tokens(len(summary.text) + sum(message_chars(m) for m in session.messages)) * budget.ratio)
    emit(CompactionEvent(session.id, "done", reason, len(older), len(kept), before, after, summary.text))
    return Compacted(len(older), len(kept), total)
