"""A ``bash`` tool for the tests when crab-tools-basic is not installed: ``bash -c`` through
``crab.processes`` exactly as crab-tools-basic's does (wrap_command, its own session, a timeout)."""

import asyncio
import subprocess

import crab
from crab import processes


async def bash(command: str, ctx: crab.ToolContext, timeout: float = 60.0) -> crab.ToolResult:
    """Run a shell command in the workspace."""
    tag = processes.new_tag()
    process = await asyncio.create_subprocess_exec(
        *processes.wrap_command(["bash", "-c", command], ctx.workspace),
        cwd=ctx.workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        **processes.spawn_options(tag),
    )
    processes.track(process.pid, tag)
    try:
        out, _ = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        await asyncio.to_thread(processes.terminate, process.pid, tag, 1.0)
        await process.wait()
        return crab.ToolResult(f"[timed out after {timeout:g} s]", is_error=True)
    finally:
        if process.returncode is not None:
            processes.untrack(process.pid)
    text = out.decode("utf-8", "replace")
    return crab.ToolResult(f"{text}[exit code {process.returncode}]", is_error=process.returncode != 0)


@crab.hookimpl
def crab_tools(config):
    return [crab.tool(name="bash", permission="exec", timeout=120)(bash)]
