"""Core's everyday session commands: /model /new /cost in every channel; /clear, /resume (every
session of the workspace) and /edit at the local terminal only."""

from __future__ import annotations

import time
from collections.abc import Iterable

from crab._contracts.commands import Command, CommandContext, CommandResult
from crab._contracts.errors import StoreError
from crab._contracts.handle import AgentHandle
from crab._contracts.messages import Usage
from crab._contracts.providers import ModelInfo
from crab._contracts.storage import Entry, SessionInfo
from crab._values.message_json import usage_from_dict
from crab._values.pricing import cache_savings

RECENT = 10
"""How many sessions ``/resume`` lists."""
FIRST_LINE = 60
"""Characters of a session's first input ``/resume`` shows."""


# --- /model ---------------------------------------------------------------------------------


def describe_model(info: ModelInfo | None) -> str:
    """``context 200k, $1/M in, $2/M out`` (what is known of it), or empty."""
    if info is None:
        return ""
    parts = []
    if info.context_window:
        parts.append(f"context {tokens(info.context_window)}")
    if info.input_price is not None:
        parts.append(f"${info.input_price:g}/M in")
    if info.output_price is not None:
        parts.append(f"${info.output_price:g}/M out")
    if info.cache_read_price is not None:
        parts.append(f"${info.cache_read_price:g}/M cache read")
    if info.cache_write_price is not None:
        parts.append(f"${info.cache_write_price:g}/M cache write")
    return ", ".join(parts)


def tokens(count: int) -> str:
    """``200000`` → ``200k``; ``1000000`` → ``1M``; small counts as they are."""
    if count >= 1_000_000 and count % 1_000_000 == 0:
        return f"{count // 1_000_000}M"
    if count >= 1000:
        return f"{count / 1000:g}k"
    return str(count)


async def model_command(ctx: CommandContext, args: str) -> CommandResult:
    handle, session = ctx.handle, ctx.session
    if args.strip():
        chosen = await handle.set_model(session, args)  # ConfigError: the router shows its one line
        about = describe_model(handle.model_info(session))
        return CommandResult(f"model: {chosen} from the next request on{f' ({about})' if about else ''}")
    current = handle.session_model(session)
    about = describe_model(handle.model_info(session))
    lines = [f"model: {current}{f' ({about})' if about else ''}", "configured:"]
    lines += [f"  {'*' if name == current else ' '} {name}" for name in handle.models(session)]
    lines.append("switch with /model PROVIDER/MODEL (Tab completes it in the rich input)")
    return CommandResult("\n".join(lines))


# --- /new, /clear ---------------------------------------------------------------------------


async def new_command(ctx: CommandContext, args: str) -> CommandResult:
    info = ctx.session.info
    # The store's meta carries a channel's conversation key: the new session stays that chat's.
    fresh = await ctx.handle.new_session(info.title, meta=info.meta)
    kept = " (/resume lists it)" if ctx.local else ""
    return CommandResult(f"new session {fresh.id}; {ctx.session.id} stays in the store{kept}", switch_session=fresh.id)


async def clear_command(ctx: CommandContext, args: str) -> CommandResult:
    started = await new_command(ctx, args)
    return CommandResult(started.text, switch_session=started.switch_session, clear_screen=True)


# --- /resume --------------------------------------------------------------------------------


def first_input(entries: Iterable[Entry]) -> str:
    """The first line of a session's first user input (crab's own notes are not the user's)."""
    from crab._builtin.tool_view import is_note

    for entry in entries:
        payload = entry.payload
        if entry.type == "message" and payload.get("role") == "user":
            text = str(payload.get("content", ""))
            if text.strip() and not is_note(text):
                line = text.strip().splitlines()[0]
                return line if len(line) <= FIRST_LINE else line[: FIRST_LINE - 1] + "…"
    return ""


def when(at: float | None) -> str:
    """A local time, with the date when it is not today."""
    if at is None:
        return "?"
    stamp = time.localtime(at)
    today = time.localtime()
    same_day = stamp[:3] == today[:3]
    return time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", stamp)


async def others(ctx: CommandContext) -> list[SessionInfo]:
    """This workspace's recent sessions but the current one, most recently updated first."""
    listed = await ctx.handle.recent_sessions(RECENT + 1)
    return [info for info in listed if info.id != ctx.session.id][:RECENT]


async def session_lines(handle: AgentHandle, sessions: list[SessionInfo]) -> list[str]:
    """``1. ID · 14:02 · 12 entries · first line`` for each of ``sessions`` (``/resume``, ``crab chat -r``)."""
    lines = []
    for number, info in enumerate(sessions, 1):
        entries = await handle.entries(info.id)
        count = info.entry_count if info.entry_count is not None else len(entries)
        said = first_input(entries) or "(nothing said yet)"
        lines.append(f"  {number}. {info.id} · {when(info.updated or info.created)} · {count} entries · {said}")
    return lines


async def resume_command(ctx: CommandContext, args: str) -> CommandResult:
    # Sessions are switched with CommandResult.switch_session: the channel resumes the one named.
    wanted = args.strip()
    if not wanted:
        sessions = await others(ctx)
        if not sessions:
            return CommandResult(f"no other session of this folder in the {ctx.handle.store_name} store")
        lines = ["recent sessions of this folder:", *await session_lines(ctx.handle, sessions)]
        lines.append("resume one with /resume N (its number) or /resume ID")
        return CommandResult("\n".join(lines))
    if wanted.isdigit() and len(wanted) < 4:
        sessions = await others(ctx)
        number = int(wanted)
        if not 1 <= number <= len(sessions):
            return CommandResult(f"no session number {number}: /resume lists {len(sessions)}", is_error=True)
        wanted = sessions[number - 1].id
    if wanted == ctx.session.id:
        return CommandResult(f"already in session {wanted}")
    try:
        await ctx.handle.session_info(wanted)
    except StoreError:
        store = ctx.handle.store_name
        return CommandResult(f"no session {wanted!r} in the {store} store (/resume lists them)", is_error=True)
    return CommandResult(f"resumed session {wanted}", switch_session=wanted)


# --- /cost ----------------------------------------------------------------------------------


def usage_by_model(entries: Iterable[Entry]) -> dict[str, tuple[int, Usage]]:
    """``provider/model`` → (calls, summed usage) from a session's ``model_call`` events (turns'
    and compactions' alike), in the order the models were first used."""
    found: dict[str, tuple[int, Usage]] = {}
    for entry in entries:
        payload = entry.payload
        if entry.type != "event" or payload.get("kind") != "model_call":
            continue
        name = f"{payload.get('provider', '?')}/{payload.get('model', '?')}"
        raw = payload.get("usage")
        usage = usage_from_dict(raw) if isinstance(raw, dict) else Usage()
        calls, total = found.get(name, (0, Usage()))
        found[name] = (calls + 1, total + usage)
    return found


def usage_line(calls: int, usage: Usage) -> str:
    cached = ""
    if usage.cache_read_tokens or usage.cache_write_tokens:
        cached = f", {usage.cache_read_tokens:,} cache read, {usage.cache_write_tokens:,} cache write"
    cost = f"${usage.cost:.4f}" if usage.cost is not None else "cost unknown (no prices configured)"
    noun = "call" if calls == 1 else "calls"
    return f"{calls} {noun}, {usage.input_tokens:,} in, {usage.output_tokens:,} out{cached} · {cost}"


def savings_line(usage: Usage, info: ModelInfo) -> str | None:
    """What prompt caching saved on ``usage`` at ``info``'s prices, or None (no prices, no cache)."""
    priced = cache_savings(usage, info)
    if priced is None:
        return None
    uncached, cached = priced
    saved = uncached - cached
    verb = "saved" if saved >= 0 else "cost"
    return (
        f"caching {verb} ${abs(saved):.4f}: the cached tokens would have cost ${uncached:.4f} as input, "
        f"and cost ${cached:.4f}"
    )


async def cost_command(ctx: CommandContext, args: str) -> CommandResult:
    by_model = usage_by_model(await ctx.handle.entries(ctx.session.id))
    if not by_model:
        return CommandResult("no model calls in this session yet")
    lines = [f"session {ctx.session.id}:"]
    width = max(len(name) for name in by_model)
    for name, (calls, usage) in by_model.items():
        lines.append(f"  {name:<{width}}  {usage_line(calls, usage)}")
    if len(by_model) > 1:
        calls = sum(count for count, _ in by_model.values())
        total = Usage()
        for _, usage in by_model.values():
            total = total + usage
        lines.append(f"  {'total':<{width}}  {usage_line(calls, total)}")
    # Prices are known for the session's model (the provider's table or config); another model
    # the session used earlier is shown without a savings line rather than priced wrongly.
    current = ctx.handle.session_model(ctx.session)
    info = ctx.handle.model_info(ctx.session)
    if current in by_model and info is not None:
        line = savings_line(by_model[current][1], info)
        if line is not None:
            lines.append(f"  {line}" if len(by_model) == 1 else f"  {current}: {line}")
    return CommandResult("\n".join(lines))


# --- /edit ----------------------------------------------------------------------------------


def edit_command(ctx: CommandContext, args: str) -> CommandResult:
    # crab chat's prompt opens the editor itself before routing a line (crab/_cli/editor.py); a
    # router that gets /edit is one with no editor of its own to open.
    return CommandResult("/edit opens $EDITOR at crab chat's prompt (Ctrl-G in the rich input)", is_error=True)


SESSION_COMMANDS = [
    Command("model", "show or switch the model of this session", model_command, usage="[PROVIDER/]MODEL"),
    Command("new", "start a fresh session (this one stays in the store)", new_command),
    Command("clear", "start a fresh session and clear the screen", clear_command, local_only=True),
    Command(
        "resume", "list this folder's recent sessions, or switch to one", resume_command, "[N|ID]", local_only=True
    ),
    Command("cost", "tokens and cost of this session, per model", cost_command),
    Command("edit", "write the next input in $EDITOR", edit_command, usage="[text]", local_only=True),
]
