"""crab-sandbox: every process a tool starts (and, with ``mcp_servers``, every MCP stdio server)
runs inside bubblewrap (hook implementations only).

The sandbox itself is ``crab_sandbox.policy`` (the bwrap arguments), ``runtime`` (the
``crab.processes`` command wrapper), ``report`` (the note a refused command's result gets) and
``bwrap`` (finding and probing bwrap); each is imported when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    from crab import AgentHandle, Config, ConfigTable, Tool, ToolContext, ToolResult
    from crab.messages import ToolCall

CRAB_API = ">=0.1,<0.2"


@crab.hookimpl
def crab_config_table() -> ConfigTable:
    """``[plugins.sandbox]``: see ``crab_sandbox.settings.TABLE``."""
    from crab_sandbox.settings import TABLE

    return TABLE


@crab.hookimpl(tryfirst=True)
def crab_startup(agent: AgentHandle) -> None:
    """Probe bwrap and start wrapping this agent's tool processes: first, before another plugin's
    start-up starts a process (crab-mcp's stdio servers)."""
    from crab_sandbox import runtime

    runtime.start(agent)


@crab.hookimpl
def crab_shutdown(agent: AgentHandle) -> None:
    from crab_sandbox import runtime

    runtime.stop(agent)


@crab.hookimpl
def crab_after_tool_call(call: ToolCall, tool: Tool, result: ToolResult, ctx: ToolContext) -> ToolResult | None:
    """Say in the result what the sandbox refused (a path, the network, a variable)."""
    from crab_sandbox import runtime

    return runtime.annotate(call, result, ctx, tool)


@crab.hookimpl
def crab_doctor(config: Config) -> list[tuple[str, str]]:
    """Whether bubblewrap starts here, in the mode this config asks for."""
    from crab_sandbox import cli

    return cli.doctor_lines(config)


@crab.hookimpl
def crab_cli(app: Any, config: Config) -> None:
    """``crab sandbox check``: whether the sandbox works here, and why not."""
    import typer

    sandbox = typer.Typer(help="The OS sandbox tools' commands run in (bubblewrap).", no_args_is_help=True)

    @sandbox.command("check")
    def check() -> None:
        """Start a sandbox here and say whether it works, and what it lets commands do."""
        from crab_sandbox import cli

        raise typer.Exit(cli.check(config))

    app.add_typer(sandbox, name="sandbox")
