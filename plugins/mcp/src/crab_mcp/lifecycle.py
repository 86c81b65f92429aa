"""What ``crab_startup`` does: start the configured servers and hand their tools to the agent
(and their sampling requests the user's policy and the agent's model: ``crab_mcp.sampling``).

Start-up waits for the servers at most ``[plugins.mcp] startup_wait`` seconds (they connect in
parallel): a server still connecting then keeps connecting in the background, up to its
``connect_timeout``, and its tools join the registry when it is ready, with one notice saying
so (the model's tool list changes once, from the next request on); one that fails later gets
the same warning as one that failed in time.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from crab_mcp.manager import Manager
from crab_mcp.sampling import SamplingPolicy
from crab_mcp.settings import DEFAULT_SAMPLING_MAX_TOKENS, DEFAULT_STARTUP_WAIT, server_configs, server_roots

if TYPE_CHECKING:
    from crab import AgentHandle


async def start_servers(agent: AgentHandle, plugin: str) -> Manager | None:
    """Start every enabled server at once; report each failure as one warning; register the tools.

    Returns None when no server is configured (nothing to stop later).
    """
    configs = [c for c in server_configs(agent.config.plugin_settings(plugin)) if c.enabled]
    if not configs:
        return None
    manager = Manager.from_configs(configs)
    settings = agent.config.plugin_settings(plugin)
    extra = [Path(p).expanduser() for p in settings.get("roots") or []]
    policy = SamplingPolicy(
        str(settings.get("sampling") or "ask"),
        int(settings.get("sampling_max_tokens") or DEFAULT_SAMPLING_MAX_TOKENS),
        agent.complete,
        agent.model,
    )
    for link in manager.links.values():
        link.workspace, link.extra_roots = agent.workspace, server_roots(link.config, extra)
        link.agent_config = agent.config  # whose server it is, for crab.processes.wrap_command
        link.peer.sampling_policy = policy
    wait = float(settings.get("startup_wait", DEFAULT_STARTUP_WAIT))
    failed = await manager.start(wait)
    for name, reason in failed.items():
        agent.notice(failure_notice(name, reason), "warning")
    # No await from here to attach: a server that gets ready later joins through the register.
    agent.add_tools(plugin, [*manager.tools(), *manager.resource_tools()])
    manager.attach(lambda tools: agent.add_tools(plugin, tools))
    manager.notice = agent.notice
    manager.session_info = agent.session_info

    def report(name: str, seconds: float, failure: str | None) -> None:
        if failure is not None:
            agent.notice(failure_notice(name, failure), "warning")
            return
        count = sum(1 for entry in manager.entries.values() if entry.server == name)
        agent.notice(
            f"MCP server {name!r} was ready after {seconds:.1f} s (crab went on after the {wait:g} s "
            f"start-up wait): its {count} tool(s) joined from the next model request on"
        )

    manager.finish_in_background(report)
    return manager


def failure_notice(name: str, reason: str) -> str:
    return (
        f"MCP server {name!r} failed to start: {reason}; its tools are missing "
        "for this run (`crab mcp list` shows every server and why)"
    )
