"""One run's sandbox: probed at start-up, a ``crab.processes`` command wrapper while the agent
lives, and the record of what each sandboxed call was denied (for its result's note). With
``mcp_servers`` it wraps crab-mcp's stdio servers too (``Launch.tool`` ``mcp:NAME``).

The wrapper is process-wide (``crab.processes.add_command_wrapper``); it wraps only the calls of
the agents that started it, told apart by their config, as crab-schedule tells its agents apart.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crab
from crab import processes

from crab_sandbox import bwrap, policy, report, sockets
from crab_sandbox.settings import NAME, Settings, load_settings

KEYBOARD = "!keyboard"
"""``Launch.tool`` of a ``!cmd`` a person typed at the keyboard of ``crab chat`` (crab.processes)."""
MCP_SERVER = "mcp:"
"""``Launch.tool`` prefix of an MCP stdio server crab-mcp starts (``mcp:NAME``)."""

STATE_KEY = "sandbox.calls"
"""``ToolContext.state`` key: call id → ``policy.Facts`` of the commands it started."""


@dataclass(frozen=True, slots=True)
class Active:
    """The sandbox of one agent: its config, the bwrap that works (or why none does), its mode."""

    config: Any
    probe: bwrap.Probe
    mode: str


_lock = threading.Lock()
_active: dict[int, Active] = {}
_remove: list[Any] = []
_probes: dict[str, bwrap.Probe] = {}


def settings_for(config: Any, workspace: Path) -> Settings:
    """This agent's ``Settings``.

    Not ``[plugins.tools-basic] extra_roots``: core drops an untrusted project's trust-only keys
    only from tables a loaded plugin declares, so without crab-tools-basic a project could make
    any folder writable through it. The user lists such folders in ``writable``.
    """
    table = config.plugin_settings(NAME) if config is not None else {}
    return load_settings(table, workspace)


def probe_once(configured: str) -> bwrap.Probe:
    """The probe of this bwrap, run once per process (a few milliseconds, but every start needs it)."""
    with _lock:
        found = _probes.get(configured)
    if found is None:
        found = bwrap.probe(configured)
        with _lock:
            _probes[configured] = found
    return found


def start(agent: crab.AgentHandle) -> None:
    """Probe bwrap and wrap this agent's tool processes; say so when the sandbox cannot start."""
    settings = settings_for(agent.config, agent.workspace)
    if settings.mode == "off":
        return
    found = probe_once(settings.bwrap)
    if not found.works and settings.mode == "on":
        agent.notice(
            f"sandbox: tools' commands run unsandboxed: {found.reason} "
            '(crab sandbox check; [plugins.sandbox] mode = "required" refuses them instead)',
            "warning",
        )
    with _lock:
        _active[id(agent.config)] = Active(agent.config, found, settings.mode)
        if not _remove:
            _remove.append(processes.add_command_wrapper(wrap))


def stop(agent: crab.AgentHandle) -> None:
    """Forget this agent; the wrapper goes when no agent needs it."""
    with _lock:
        _active.pop(id(agent.config), None)
        if not _active and _remove:
            _remove.pop()()


def _unreadable() -> Path:
    """An empty file nobody may read, bound over hidden files (made once, in crab's home)."""
    path = crab.config.crab_home() / NAME / "unreadable"
    with contextlib.suppress(OSError):
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.touch(mode=0)
        os.chmod(path, 0)
        return path
    return Path("/dev/null")


def wrap(launch: processes.Launch) -> list[str] | None:
    """The ``crab.processes`` wrapper: this command inside bwrap, for the calls of our agents."""
    ctx = launch.context
    config = getattr(ctx, "config", None)
    with _lock:
        active = _active.get(id(config)) if config is not None else None
    if active is None or active.config is not config:
        return None  # not a tool call of an agent that runs the sandbox
    workspace = Path(ctx.workspace)
    settings = settings_for(config, workspace)
    if launch.tool == KEYBOARD and settings.shell_escape == "keyboard-free":
        return None  # the person typing is the user: their own command, as in their own shell
    server = launch.tool.startswith(MCP_SERVER)
    if server and not settings.mcp_servers:
        return None  # MCP servers run inside only when the user asks (mcp_servers)
    if not active.probe.works or active.probe.bwrap is None:
        if active.mode == "required":
            raise crab.ToolError(
                f"refused: [plugins.sandbox] mode is required and the sandbox cannot start: {active.probe.reason}"
            )
        return None
    argv, facts = policy.build(
        active.probe.bwrap,
        launch.argv,
        workspace=workspace,
        cwd=launch.cwd,
        settings=settings,
        # A server's environment is crab-mcp's short safe list plus what its config passes on
        # purpose (a token for its API): nothing of crab's own to take away.
        env={} if server else os.environ,
        secrets=crab.secrets.known_secrets(config),
        network=settings.network or launch.permission == "network",
        unreadable=_unreadable(),
        sockets=sockets.host_sockets(),
    )
    if ctx.call_id and not launch.tool.startswith("!"):  # a !cmd's result gets no after-call note
        ctx.state.setdefault(STATE_KEY, {})[ctx.call_id] = facts
    return argv


def annotate(
    call: crab.messages.ToolCall, result: crab.ToolResult, ctx: crab.ToolContext, tool: crab.Tool | None = None
) -> crab.ToolResult | None:
    """The result with one line saying what the sandbox refused, when that shows in it."""
    calls = ctx.state.get(STATE_KEY)
    facts = calls.pop(ctx.call_id, None) if isinstance(calls, dict) else None
    if facts is None:
        return None
    command = "\n".join(v for v in call.arguments.values() if isinstance(v, str))
    properties = tool.parameters.get("properties", {}) if tool is not None else {}
    line = report.note(facts, command, result.content, background="background" in properties)
    if line is None:
        return None
    return crab.ToolResult(f"{result.content}\n{line}", result.is_error, result.details)
