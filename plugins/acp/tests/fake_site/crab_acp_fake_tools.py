"""Tools for crab-acp's end-to-end tests: a change with its diff, a plan, a long command, a note, a
plan approved."""

import asyncio
import subprocess
import sys

import crab
from crab import processes


@crab.tool(permission="write")
def patch_file(path: str, ctx: crab.ToolContext) -> crab.ToolResult:
    """Append a line to a file in the workspace and return the diff."""
    target = ctx.workspace / path
    before = target.read_text() if target.exists() else ""
    after = before + "patched\n"
    target.write_text(after)
    diff = crab.events.FileDiff(
        path=path, unified=f"--- a/{path}\n+++ b/{path}\n@@\n+patched\n", before=before, after=after, added=1
    )
    return crab.ToolResult(f"patched {path}", diffs=(diff,))


@crab.tool
def make_plan(steps: list[str], ctx: crab.ToolContext) -> str:
    """Set the session's plan: the first step in progress, the rest pending."""
    items = tuple(crab.events.PlanItem(text, "in_progress" if i == 0 else "pending") for i, text in enumerate(steps))
    ctx.emit(crab.events.PlanEvent(ctx.session_id, items))
    return f"plan of {len(items)} steps"


@crab.tool(permission="exec")
async def long_command(marker: str, ctx: crab.ToolContext) -> str:
    """Start a process that runs for minutes (named by marker) and wait for it."""
    tag = processes.new_tag()
    code = f"import time  # {marker}\ntime.sleep(300)"
    (ctx.workspace / f"{marker}.started").write_text("")
    process = await asyncio.create_subprocess_exec(
        *processes.wrap_command([sys.executable, "-c", code], ctx.workspace),
        cwd=ctx.workspace,
        stdin=subprocess.DEVNULL,
        **processes.spawn_options(tag),
    )
    processes.track(process.pid, tag)
    try:
        await process.wait()
    finally:
        if process.returncode is None:
            await asyncio.to_thread(processes.terminate, process.pid, tag, 1.0)
        processes.untrack(process.pid)
    return "finished"


@crab.tool
def note(text: str) -> str:
    """Echo a note back."""
    return f"noted: {text}"


async def _ask_user(arguments, ctx):
    if ctx.question is None:
        return "nobody can answer"
    answer = await ctx.question(crab.Question(arguments["question"], tuple(arguments.get("choices", ())), False))
    return f"answer: {answer}"


ask_user = crab.Tool(
    name="ask_user",
    description="Ask the user a question (as crab-ask's tool does, through ctx.question).",
    parameters={
        "type": "object",
        "properties": {"question": {"type": "string"}, "choices": {"type": "array", "items": {"type": "string"}}},
        "required": ["question"],
    },
    handler=_ask_user,
)


@crab.tool
def approve_plan(ctx: crab.ToolContext) -> str:
    """Stand in for crab-plan's present_plan answered "Approve": the session's plan switch off."""
    ctx.state["crab.permissions.plan"] = False
    return "approved"


@crab.hookimpl
def crab_tools(config):
    return [patch_file, make_plan, long_command, note, ask_user, approve_plan]


@crab.hookimpl
def crab_commands(config):
    return [crab.Command("hello", "say hello", lambda ctx, args: f"hello {args}".strip(), usage="[NAME]")]
