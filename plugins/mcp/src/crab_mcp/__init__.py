"""crab-mcp: MCP servers' tools become crab tools; ``crab mcp serve`` offers crab's tools over MCP.

Hook implementations only. Servers start in ``crab_startup`` (they must answer before their
tools are known) and join the registry through ``AgentHandle.add_tools``; they stop in
``crab_shutdown``. Nothing here imports ``mcp``: ``crab --help`` loads none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    from pathlib import Path

    from crab import AgentHandle, Command, Config, ConfigTable, ToolContext, ToolResult
    from crab.hooks import Deny
    from crab.messages import UserMessage

    from crab_mcp.manager import Manager

CRAB_API = ">=0.1,<0.2"
PLUGIN = "mcp"


class PromptHooks:
    """The hook crab-mcp declares: prompts other plugins offer, which ``crab mcp serve`` serves."""

    @crab.hookspec
    def crab_prompts(self, config: Config) -> list[dict[str, Any]] | None:
        """Prompts for an MCP client of ``crab mcp serve`` (crab-skills offers its skills).

        Each is a dict: ``name``, ``description``, ``arguments`` (a list of ``{"name",
        "description", "required"}``) and ``render(arguments) -> str``, the text of the one user
        message the prompt gives. For the folder crab runs in (``crab mcp serve``'s workspace).
        Collected once when the server starts; every plugin's lists are joined, in plugin order,
        and a name offered twice keeps the first. A plugin implementing it loads fine without
        crab-mcp; its implementation is then never called.
        """


CRAB_HOOKSPECS = PromptHooks

_running: dict[int, Manager] = {}
"""The servers of each live agent (by the id of its config), from startup to shutdown."""


@crab.hookimpl
def crab_config_table() -> ConfigTable:
    """``[plugins.mcp]``: see ``crab_mcp.settings.TABLE``."""
    from crab_mcp.settings import TABLE

    table: ConfigTable = TABLE
    return table


@crab.hookimpl
def crab_commands(config: Config) -> list[Command]:
    """``/SERVER`` (lists its prompts) and ``/SERVER:PROMPT ARGS`` for every enabled server."""
    servers = config.plugin_settings(PLUGIN).get("servers") or {}
    enabled = [name for name, table in servers.items() if table.get("enabled", True)]
    if not enabled:
        return []
    from crab_mcp.prompts import prompt_command

    return [prompt_command(name, _manager_of) for name in enabled]


def _manager_of(handle: AgentHandle) -> Manager | None:
    return _running.get(id(handle.config))


@crab.hookimpl
async def crab_startup(agent: AgentHandle) -> None:
    """Start every enabled server in parallel and register the tools of those that answered."""
    from crab_mcp.lifecycle import start_servers

    manager = await start_servers(agent, PLUGIN)
    if manager is not None:
        _running[id(agent.config)] = manager


@crab.hookimpl
async def crab_shutdown(agent: AgentHandle) -> None:
    """Stop this agent's servers (and their processes)."""
    manager = _running.pop(id(agent.config), None)
    if manager is not None:
        await manager.stop()


@crab.hookimpl
def crab_after_tool_call(result: ToolResult, ctx: ToolContext) -> ToolResult | None:
    """After a session's next tool result: the resources it read that changed since (``crab_mcp.subscriptions``)."""
    manager = _running.get(id(ctx.config)) if ctx.config is not None else None
    return None if manager is None else manager.watch.note_into(result, ctx.session_id)


@crab.hookimpl
async def crab_prompt_submit(
    prompt: str, session_id: str, workspace: Path, config: Config | None
) -> Deny | UserMessage | None:
    """``@server:uri`` in the user's prompt: that resource as context (``crab_mcp.attach``)."""
    if config is None or "@" not in prompt:  # None: a child agent's turn, whose prompt the model wrote
        return None
    manager = _running.get(id(config))
    if manager is None:
        return None
    from crab_mcp.attach import attach

    return await attach(manager, prompt, session_id, workspace, config)


@crab.hookimpl
def crab_completions(agent: AgentHandle, word: str) -> list[tuple[str, str]] | None:
    """Tab on ``@server:uri``: the resources the servers already listed (``crab_mcp.completion``)."""
    if not word.startswith("@"):
        return None
    manager = _running.get(id(agent.config))
    if manager is None:
        return None
    from crab_mcp.completion import candidates, listings

    return candidates(word, listings(manager, word))


@crab.hookimpl
def crab_cli(app: Any, config: Config) -> None:
    """``crab mcp list|tools|add|remove|serve``; each command imports its work when it runs (``crab_mcp.cli``)."""
    import typer

    mcp_app = typer.Typer(help="MCP servers: list them, show their tools, add or remove one, serve crab's tools.")

    @mcp_app.command("list")
    def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Every configured server: status (ready, failed, disabled, untrusted) and why."""
        from crab_mcp.cli import print_servers

        print_servers(config, as_json)

    @mcp_app.command("tools")
    def tools_cmd(
        server: str | None = typer.Argument(None, help="Only this server's tools."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """The crab tools each server gives (a name mapped to fit providers shows its MCP name)."""
        from crab_mcp.cli import show_tools

        raise typer.Exit(show_tools(config, server, as_json))

    @mcp_app.command("add", no_args_is_help=True)
    def add_cmd(
        name: str = typer.Argument(..., help="The server's name (its tools become NAME_tool)."),
        command: list[str] | None = typer.Argument(None, help="-- COMMAND ARGS… of a stdio server."),
        url: str | None = typer.Option(None, "--url", help="A streamable-HTTP server's URL instead."),
        env: list[str] | None = typer.Option(None, "--env", help="KEY=VALUE for the server; ${VAR} for secrets."),
        header: list[str] | None = typer.Option(None, "--header", help="KEY=VALUE HTTP header; ${VAR} works."),
        force: bool = typer.Option(False, "--force", help="Replace a server of that name."),
    ) -> None:
        """Add a server to your user config (~/.crab/config.toml), keeping its comments."""
        from crab_mcp.config_write import add_server

        where = add_server(
            config.user_path, name, command or [], url=url, env=env or [], headers=header or [], force=force
        )
        typer.echo(f"added MCP server {name!r} to {where}; check it with: crab mcp list")

    @mcp_app.command("remove", no_args_is_help=True)
    def remove_cmd(name: str = typer.Argument(..., help="The server's name (see `crab mcp list`).")) -> None:
        """Remove a server from your user config (~/.crab/config.toml), keeping its comments."""
        from crab_mcp.config_write import remove_server

        where = remove_server(config.user_path, name)
        typer.echo(f"removed MCP server {name!r} from {where}")

    @mcp_app.command("serve")
    def serve_cmd(
        plugins: str | None = typer.Option(None, "--plugins", help="Comma list of plugins whose tools to offer."),
        http: int | None = typer.Option(
            None, "--http", help="Serve streamable HTTP on 127.0.0.1:PORT (bearer token in $CRAB_HOME/mcp/serve.token)."
        ),
    ) -> None:
        """Offer crab's tools to an MCP client over stdio or HTTP (write/exec only if serve_permissions allows)."""
        from crab_mcp.bridge import serve

        raise typer.Exit(serve(plugins, http))

    app.add_typer(mcp_app, name="mcp")
