"""Core's router commands: /help /tools /plugins /session /handoff /compact /fork /abort /quit (the
everyday session commands are ``session_commands``)."""

from __future__ import annotations

from crab._contracts.commands import Command, CommandContext, CommandResult
from crab._contracts.events import CompactionEvent


def help_command(ctx: CommandContext, args: str) -> str:
    lines = ["Commands:"]
    for name, command in sorted(ctx.handle.commands.items()):
        usage = f" {command.usage}" if command.usage else ""
        lines.append(f"  /{name}{usage} — {command.description}")
    lines.append("  //text sends a literal /text to the model; !cmd runs a shell command (local only)")
    return "\n".join(lines)


def tools_command(ctx: CommandContext, args: str) -> str:
    tools = ctx.handle.tools
    if not tools:
        return "No tools are loaded (install crab-tools-basic, or check `crab plugins list`)."
    from crab._builtin.tool_view import one_line

    lines = []
    for name, tool in sorted(tools.items()):
        first = one_line(tool.description)  # the line the progressive view gives the model
        lines.append(f"  {name} [{tool.permission}] ({tool.plugin or 'core'}) — {first}")
    return "\n".join(lines)


def plugins_command(ctx: CommandContext, args: str) -> str:
    lines = []
    for plugin in ctx.handle.plugins():
        reason = f" — {plugin.reason}" if plugin.reason else ""
        lines.append(f"  {plugin.name}: {plugin.status}{reason}")
    return "\n".join(lines)


async def session_command(ctx: CommandContext, args: str) -> str:
    info = await ctx.handle.session_info(ctx.session.id)
    usage = info.usage
    lines = [
        f"session {info.id}",
        f"  store: {ctx.handle.store_name}",
        f"  workspace: {info.workspace}",
        f"  model: {ctx.handle.session_model(ctx.session)}",
    ]
    if info.entry_count is not None:
        lines.append(f"  entries: {info.entry_count}")
    if info.forked_from:
        lines.append(f"  forked from: {info.forked_from} at {info.fork_entry}")
    if usage is not None:
        cost = f", ${usage.cost:.4f}" if usage.cost is not None else ""
        lines.append(f"  tokens: {usage.input_tokens} in, {usage.output_tokens} out{cost}")
    lines.append(f"  messages in context: {len(ctx.session.messages)}")
    return "\n".join(lines)


async def handoff_command(ctx: CommandContext, args: str) -> CommandResult:
    name, _, summary = args.partition(" ")
    if not name:
        return CommandResult("usage: /handoff NAME [summary of what matters so far]", is_error=True)
    state = {"summary": summary.strip()} if summary.strip() else {}
    await ctx.handle.handoff(ctx.session, name, state)
    return CommandResult(f"handoff {name!r} recorded: the model's context starts afresh from here")


async def compact_command(ctx: CommandContext, args: str) -> CommandResult:
    # The compaction's own events carry its counts: the answer repeats those, so the two agree.
    seen: list[CompactionEvent] = []
    unsubscribe = ctx.handle.subscribe(
        lambda event: seen.append(event) if isinstance(event, CompactionEvent) else None, session=ctx.session
    )
    try:
        compacted = await ctx.handle.compact(ctx.session, args.strip() or None)
    finally:
        unsubscribe()
    if compacted:
        done = next((event for event in reversed(seen) if event.phase == "done"), None)
        counts = (
            f"{done.summarised} older messages became a summary, {done.kept} recent ones stay verbatim; "
            if done
            else ""
        )
        return CommandResult(f"compacted: {counts}the full history stays in the session")
    if any(event.phase == "failed" for event in seen):
        return CommandResult("nothing was compacted: the history is unchanged", is_error=True)
    return CommandResult("nothing to compact yet: there is no older history to summarise")


async def fork_command(ctx: CommandContext, args: str) -> CommandResult:
    at = args.strip() or None
    info = await ctx.handle.fork(ctx.session.id, at)
    where = f" at entry {at}" if at else ""
    return CommandResult(f"forked {ctx.session.id}{where} into {info.id}; now in the fork", switch_session=info.id)


def abort_command(ctx: CommandContext, args: str) -> str:
    return "aborted the running turn" if ctx.handle.abort(ctx.session) else "nothing is running"


def quit_command(ctx: CommandContext, args: str) -> CommandResult:
    return CommandResult("bye", quit=True)


CORE_COMMANDS = [
    Command("help", "list commands", help_command),
    Command("tools", "list the tools the model can use", tools_command),
    Command("plugins", "list plugins and their status", plugins_command),
    Command("session", "show this session's id, store, model and usage", session_command),
    Command(
        "handoff", "start the model's context afresh, keeping a named anchor", handoff_command, usage="NAME [summary]"
    ),
    Command("compact", "summarise older history now, keeping recent turns verbatim", compact_command, usage="[focus]"),
    Command("fork", "continue in a new session branched from here (or from ENTRY)", fork_command, usage="[ENTRY]"),
    Command("abort", "stop the running turn", abort_command),
    Command("quit", "leave the conversation", quit_command),
]
