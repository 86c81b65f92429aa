"""A plugin that starts a long-lived helper at start-up as crab-mcp starts a stdio server: outside
any tool call, through ``crab.processes.wrap_command`` naming itself ``mcp:fake`` with a
permission class and a context carrying the agent's config and workspace (crab-mcp's
``ServerLink._starter``). The command is ``$SANDBOX_FAKE_SERVER`` (``sh -c``), its class
``$SANDBOX_FAKE_SERVER_PERMISSION``; how the start went is written to ``server.status`` in the
workspace (``exit N``, or the refusal)."""

import asyncio
import os
import subprocess

import crab
from crab import processes


@crab.hookimpl
async def crab_startup(agent):
    command = os.environ.get("SANDBOX_FAKE_SERVER")
    if not command:
        return
    status = agent.workspace / "server.status"
    context = crab.ToolContext(session_id="", workspace=agent.workspace, config=agent.config)
    permission = os.environ.get("SANDBOX_FAKE_SERVER_PERMISSION", "network")
    try:
        argv = processes.wrap_command(
            ["sh", "-c", command], agent.workspace, tool="mcp:fake", permission=permission, context=context
        )
    except crab.ToolError as exc:
        status.write_text(str(exc))
        return
    tag = processes.new_tag()
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"]}  # crab-mcp's safe set, in short
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=agent.workspace, stdin=subprocess.DEVNULL, **processes.spawn_options(tag, env)
    )
    processes.track(process.pid, tag)
    try:
        await asyncio.wait_for(process.wait(), 60)
    finally:
        if process.returncode is None:
            await asyncio.to_thread(processes.terminate, process.pid, tag, 0.5)
            await process.wait()
        processes.untrack(process.pid)
    status.write_text(f"exit {process.returncode}")
