"""Servers' prompts as router commands: ``/server`` lists them, ``/server:prompt args`` runs one.

One ``crab.Command`` per configured server, named after it (the router reads ``/git:review x``
as ``/git review x``). The arguments are ``name=value`` pairs, or values in the order the
prompt declares its arguments (quote a value with spaces). The prompt's messages, their text
joined, become the user's next turn under a first line naming the prompt (so the server's text
is never routed as a ``/command`` or ``!shell``): the model sees what the server wrote, and
nothing else changes (tools still go through the permission gate).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from crab import Command, CommandContext, CommandResult

if TYPE_CHECKING:
    from crab_mcp.manager import Manager
    from crab_mcp.server import ServerLink


def prompt_command(server: str, manager_of: Callable[[Any], Manager | None]) -> Command:
    async def handler(ctx: CommandContext, args: str) -> CommandResult:
        manager = manager_of(ctx.handle)
        link = manager.links.get(server) if manager is not None else None
        if link is None:
            return CommandResult(f"MCP server {server!r} is not running (`crab mcp list` says why)", True)
        return await run(ctx, link, args)

    return Command(
        name=server,
        description=f"MCP server {server!r}'s prompts: /{server} lists them, /{server}:PROMPT ARGS runs one",
        handler=handler,
        usage="[PROMPT ARGS…]",
    )


def listing(link: ServerLink) -> str:
    if not link.prompts:
        return f"MCP server {link.name!r} offers no prompts"
    lines = [f"Prompts of MCP server {link.name!r} (/{link.name}:PROMPT ARGS):"]
    for p in link.prompts:
        names = " ".join(f"{a.name}{'' if a.required else '?'}" for a in p.arguments or [])
        about = (p.description or "").strip().split("\n", 1)[0][:160]
        lines.append(f"  /{link.name}:{p.name}{' ' + names if names else ''}{' — ' + about if about else ''}")
    return "\n".join(lines)


def parse(prompt: Any, words: list[str]) -> dict[str, str]:
    """``name=value`` pairs and positional values, in the order the prompt declares its arguments."""
    declared = [a.name for a in prompt.arguments or []]
    values: dict[str, str] = {}
    positional: list[str] = []
    for word in words:
        key, eq, value = word.partition("=")
        if eq and key in declared:
            values[key] = value
        else:
            positional.append(word)
    free = [n for n in declared if n not in values]
    if len(positional) > len(free):
        raise ValueError(f"too many values: {prompt.name} takes {', '.join(declared) or 'no arguments'}")
    values.update(zip(free, positional, strict=False))
    missing = [a.name for a in prompt.arguments or [] if a.required and a.name not in values]
    if missing:
        raise ValueError(f"{prompt.name} needs {', '.join(missing)} (give NAME=VALUE or the values in order)")
    return values


async def run(ctx: CommandContext, link: ServerLink, args: str) -> CommandResult:
    from crab_mcp.server import CallFailed, ServerDown

    name, _, rest = args.strip().partition(" ")
    if not name:
        return CommandResult(listing(link))
    prompt = next((p for p in link.prompts if p.name == name), None)
    if prompt is None:
        return CommandResult(f"MCP server {link.name!r} has no prompt {name!r}; /{link.name} lists them", True)
    try:
        arguments = parse(prompt, shlex.split(rest))
    except ValueError as exc:
        return CommandResult(f"/{link.name}:{name}: {exc}", True)
    try:
        result = await link.request(f"prompts/get {name}", "get_prompt", name, arguments)
    except (ServerDown, CallFailed) as exc:
        return CommandResult(f"MCP server {link.name!r} {exc}", True)
    from crab_mcp.results import _block

    text = "\n\n".join(_block(m.content) for m in result.messages).strip()
    if not text:
        return CommandResult(f"/{link.name}:{name}: the server's prompt is empty", True)
    # A first line of crab's own, so the server's text can never be read as a /command or !shell.
    outcome = await ctx.handle.handle_input(ctx.session, f"(MCP prompt {link.name}:{name})\n{text}")
    if outcome.error:
        return CommandResult(f"/{link.name}:{name}: the turn ended with an error ({outcome.stop})", True)
    return CommandResult("")
