"""Core's own plugins, registered like any other: commands, renderers, the memory store, the
base system prompt; and, each a plugin of its own so its status shows on its own, the loop
features that hooks carry (the loop guard, the progressive tool view) and the permission gate."""

from __future__ import annotations

from pathlib import Path

from crab._builtin.loop_guard import GuardPlugin
from crab._builtin.memory_store import MemoryStore
from crab._builtin.permission_gate import PermissionGate
from crab._builtin.tool_view import ToolView
from crab._contracts.commands import Command
from crab._contracts.config import Config
from crab._contracts.renderers import Renderer, RendererSpec, RenderTarget
from crab._contracts.storage import Store
from crab._host.hookspecs import hookimpl
from crab._host.plugin_host import PluginHost


def _plain(target: RenderTarget) -> Renderer:
    from crab._builtin.render_plain import PlainRenderer

    return PlainRenderer(target)


def _jsonl(target: RenderTarget) -> Renderer:
    from crab._builtin.render_jsonl import JsonlRenderer

    return JsonlRenderer(target)


class CorePlugin:
    """Hook implementations for what core offers itself."""

    @hookimpl
    def crab_commands(self, config: Config) -> list[Command]:
        from crab._builtin.commands import CORE_COMMANDS
        from crab._builtin.session_commands import SESSION_COMMANDS

        return [*CORE_COMMANDS, *SESSION_COMMANDS]

    @hookimpl
    def crab_renderers(self, config: Config) -> list[RendererSpec]:
        return [
            RendererSpec("plain", "plain text: answer on stdout, progress on stderr", _plain),
            RendererSpec("jsonl", "one JSON event per line on stdout", _jsonl),
        ]

    @hookimpl
    def crab_stores(self, config: Config) -> list[Store]:
        return [MemoryStore()]

    @hookimpl(tryfirst=True)
    def crab_system_prompt(self, workspace: Path, session_id: str, config: Config) -> list[str]:
        from crab._builtin.prompt import base_prompt, instruction_parts, session_date
        from crab._config.environ import crab_home

        view = str(config.get("crab.tool_view", "progressive"))
        calls = int(config.get("crab.max_iterations", 25))
        date = session_date(session_id)
        parts = [base_prompt(workspace, tool_view=view, date=date, max_calls=calls)]
        return [*parts, *instruction_parts(workspace, crab_home())]


def register_builtins(host: PluginHost) -> None:
    """Add core's plugins to ``host`` (before any installed plugin)."""
    host.add_builtin("core", CorePlugin())
    host.add_builtin("loop-guard", GuardPlugin())
    host.add_builtin("tool-view", ToolView(str(host.config.get("crab.tool_view", "progressive"))))
    host.add_builtin("permissions", PermissionGate(str(host.config.get("crab.permissions", "ask"))))
