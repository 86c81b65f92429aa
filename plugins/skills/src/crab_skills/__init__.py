"""crab-skills: Agent Skills (SKILL.md folders) named in the prompt, loaded by a tool or ``/skill:name``,
and the user's own slash commands (Markdown files in ``$CRAB_HOME/commands/`` and ``.crab/commands/``,
and Claude Code's ``~/.claude/commands/`` and ``.claude/commands/``).

Hook implementations only; the work is in ``crab_skills.runtime`` and the modules it uses. The
entry point is the class: crab makes one object per plugin host, which keeps the folders other
plugins ship (``crab_skill_dirs``, a hook crab-skills declares: ``SkillHooks``) for that run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    from crab import AgentHandle, Command, Config, ConfigTable, Tool, ToolContext
    from crab.hooks import Deny
    from crab.messages import ToolCall

    from crab_skills.runtime import Skills

CRAB_API = ">=0.1,<0.2"


class SkillHooks:
    """The hook crab-skills declares: other plugins ship skills through it without importing crab-skills."""

    @crab.hookspec
    def crab_skill_dirs(self, config: Config) -> list[Path] | None:
        """Folders holding skills this plugin ships (each a folder per skill with a ``SKILL.md``).

        crab-skills collects it (through ``AgentHandle.collect`` when the agent starts, or
        ``crab.hooks.collect_hook`` in ``crab skills``). Return a list of ``Path``, or None. Not
        first-result: every plugin's lists are joined, in plugin order. A plugin implementing it
        loads fine without crab-skills; its implementation is then never called.
        """


class SkillsPlugin:
    """The ``skills`` plugin: one per host."""

    CRAB_API = CRAB_API
    CRAB_HOOKSPECS = SkillHooks

    def __init__(self) -> None:
        self._skills: Skills | None = None

    @property
    def skills(self) -> Skills:
        if self._skills is None:
            from crab_skills.runtime import Skills

            self._skills = Skills()
        return self._skills

    @crab.hookimpl
    def crab_config_table(self) -> ConfigTable:
        """``[plugins.skills]``: see ``crab_skills.settings.TABLE``."""
        from crab_skills.settings import TABLE

        return TABLE

    @crab.hookimpl
    def crab_tools(self, config: Config) -> list[Tool]:
        """``skill``: load a skill's body (or a file beside it), read-only and bounded."""
        return [self.skills.tool()]

    @crab.hookimpl
    def crab_commands(self, config: Config) -> list[Command]:
        """``/skill`` (lists) and ``/skill NAME request`` = ``/skill:NAME request``; one command per
        file in ``$CRAB_HOME/commands/``, ``.crab/commands/`` and Claude Code's two folders."""
        return [
            crab.Command(
                "skill",
                "run a turn with a skill's instructions (/skill:NAME request); alone, list skills",
                self.skills.command,
                usage="[NAME [request]]",
            ),
            *self.skills.registered(config),
        ]

    @crab.hookimpl
    def crab_before_tool_call(self, call: ToolCall, ctx: ToolContext) -> Deny | None:
        """While a command with ``allowed-tools`` runs, refuse the calls it does not allow."""
        return self.skills.check_tool(call, ctx)

    @crab.hookimpl
    async def crab_prompt_submit(self, prompt: str, session_id: str) -> Deny | None:
        """A user command with ``model:`` runs its turn on that model: switched as its prompt is recorded."""
        return await self.skills.prompt_submit(prompt, session_id)

    @crab.hookimpl
    def crab_startup(self, agent: AgentHandle) -> None:
        self.skills.start(agent)

    @crab.hookimpl
    def crab_system_prompt(self, workspace: Path, session_id: str, config: Config) -> str | None:
        """The ``## Skills`` section: names and descriptions only."""
        return self.skills.prompt(workspace, config)

    @crab.hookimpl
    def crab_prompts(self, config: Config) -> list[dict[str, Any]]:
        """Every skill as a prompt (crab-mcp's hook: ``crab mcp serve``): ``crab_skills.served_prompts``."""
        from crab_skills.served_prompts import prompts

        return prompts(config)

    @crab.hookimpl
    def crab_cli(self, app: Any, config: Config) -> None:
        """``crab skills list`` and ``crab skills show NAME`` (their work imported only when run)."""
        import typer

        group = typer.Typer(help="List and show Agent Skills (SKILL.md folders).", no_args_is_help=True)

        @group.command("list")
        def list_command(as_json: bool = typer.Option(False, "--json", help="one JSON array")) -> None:
            """Every skill this folder's run sees: name, source, description (warnings on stderr)."""
            from crab_skills.cli import list_skills

            raise typer.Exit(list_skills(as_json))

        @group.command("show")
        def show_command(name: str = typer.Argument(..., help="the skill's name")) -> None:
            """Print what the skill tool would give the model for NAME."""
            from crab_skills.cli import show_skill

            raise typer.Exit(show_skill(name))

        app.add_typer(group, name="skills")
