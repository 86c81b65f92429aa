"""crab-checkpoints: a checkpoint before each turn's first change to files, ``/undo [N]`` to go
back, ``crab checkpoints list`` to see them.

Hook implementations only; the work is in ``crab_checkpoints.recorder`` (when), ``git_store``
(private refs in a git work tree), ``copy_store`` (copies outside git) and ``plan`` (what an undo
writes back, or why it refuses). The entry point is the class: crab makes one per plugin host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from crab import Command, Config, ConfigTable, Tool, ToolContext, ToolResult
    from crab.events import Event
    from crab.messages import ToolCall

    from crab_checkpoints.recorder import Recorder

CRAB_API = ">=0.1,<0.2"


class CheckpointsPlugin:
    """The ``checkpoints`` plugin: one per host, keeping each session's checkpoints of this run."""

    CRAB_API = CRAB_API

    def __init__(self) -> None:
        self._recorder: Recorder | None = None
        self._settings: dict[str, Any] = {}

    @property
    def recorder(self) -> Recorder:
        if self._recorder is None:
            from crab_checkpoints.recorder import Recorder
            from crab_checkpoints.settings import load_settings

            self._recorder = Recorder(load_settings(self._settings))
        return self._recorder

    @crab.hookimpl
    def crab_config_table(self) -> ConfigTable:
        """``[plugins.checkpoints]``: see ``crab_checkpoints.settings.TABLE``."""
        from crab_checkpoints.settings import TABLE

        return TABLE

    @crab.hookimpl
    def crab_commands(self, config: Config) -> list[Command]:
        """``/undo [N]``: put back the files the last N turns changed."""
        self._settings = dict(config.plugin_settings("checkpoints"))
        return [
            crab.Command(
                "undo",
                "put back the files the last turn changed (/undo N: the last N turns)",
                self.recorder.undo,
                usage="[N]",
            )
        ]

    @crab.hookimpl
    def crab_event(self, event: Event, session_id: str) -> None:
        """Which turn of which session is running (quick: no I/O)."""
        self.recorder.event(event, session_id)

    @crab.hookimpl
    def crab_before_tool_call(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> Awaitable[None] | None:
        """Before a turn's first call that may write: take the checkpoint (never refuses the call).
        Any other call (a read) is answered None at once, with no coroutine to make and await."""
        return self.recorder.before_call(call, tool, ctx) if self.recorder.watches(tool, ctx.session_id) else None

    @crab.hookimpl
    def crab_after_tool_call(
        self, call: ToolCall, tool: Tool, result: ToolResult, ctx: ToolContext
    ) -> Awaitable[None] | None:
        """After such a call: record how it left the files (the result is left as it is)."""
        watched = self.recorder.watches(tool, ctx.session_id)
        return self.recorder.after_call(call, tool, result, ctx) if watched else None

    @crab.hookimpl
    def crab_cli(self, app: Any, config: Config) -> None:
        """``crab checkpoints list``."""
        import typer

        group = typer.Typer(help="The checkpoints crab took before turns changed files.", no_args_is_help=True)

        @group.command("list")
        def list_command() -> None:
            """This folder's checkpoints (git work tree: every session's; else this folder's copies), oldest first."""
            from crab_checkpoints.cli import list_checkpoints

            raise typer.Exit(list_checkpoints(config))

        app.add_typer(group, name="checkpoints")
