"""The plugin's state for one run and what its hooks do: the catalog, the tool, the commands.

One ``Skills`` object lives per plugin host. It learns the folders other plugins ship when the
agent starts (``crab_skill_dirs``, collected through the handle), searches the roots again for
every prompt (a skill added mid-session appears at the next call) and shows each warning once.
It also makes the user's own command files slash commands (``crab_skills.user_commands``): while
one whose ``allowed-tools`` is set runs it refuses the calls it does not allow, and one whose
``model`` is set runs its turn on that model (``crab_skills.command_model``).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import crab
from crab import AgentHandle, Command, CommandContext, CommandResult, Config, Tool, ToolContext, ToolError, ToolResult
from crab.hooks import Deny
from crab.messages import ToolCall

from crab_skills.command_model import ModelSwitches, not_configured
from crab_skills.content import listing, loaded, prompt_section, read_file, user_turn
from crab_skills.discovery import Cache, Catalog, discover
from crab_skills.roots import build_roots, plugin_dirs
from crab_skills.settings import PLUGIN, Settings, load_settings
from crab_skills.user_commands import AllowedTool, Commands, UserCommand

HOOK = "crab_skill_dirs"
TOOL_TIMEOUT = 10.0


def catalog_for(
    workspace: Path, config: Config, plugins: list[tuple[str, Path]], cache: Cache | None = None
) -> tuple[Catalog, Settings]:
    """Every skill for ``workspace`` under ``config``, and the checked settings."""
    settings = load_settings(config.plugin_settings(PLUGIN), workspace)
    return discover(build_roots(workspace, config, settings, plugins), settings.max_bytes, cache), settings


def did_you_mean(name: str, catalog: Catalog) -> str:
    found = difflib.get_close_matches(name, list(catalog.skills), n=3, cutoff=0.5)
    return f" Did you mean: {', '.join(found)}?" if found else ""


class Skills:
    """Skills for one run: plugin folders, warnings already shown, and the handle to show them."""

    def __init__(self) -> None:
        self.plugins: list[tuple[str, Path]] = []
        self.handle: AgentHandle | None = None
        self.shown: set[str] = set()
        self.cache: Cache = {}
        self._pending_warnings: list[str] = []
        self.narrowed: dict[str, list[tuple[str, tuple[AllowedTool, ...]]]] = {}
        """Per session, the running user commands that set ``allowed-tools`` (innermost last)."""
        self.models = ModelSwitches()

    # --- catalog --------------------------------------------------------------------------

    def start(self, handle: AgentHandle) -> None:
        """Collect other plugins' folders and show what is wrong with any skill or command now."""
        self.handle = handle
        self.plugins = plugin_dirs(handle.collect(HOOK))
        self.catalog(handle.workspace, handle.config)
        self.warn(self._pending_warnings)

    def catalog(self, workspace: Path, config: Config, *, on_loop: bool = True) -> tuple[Catalog, Settings]:
        """The skills now. Off the event loop (the tool's worker thread) nothing is shown and the
        cache is left alone: events are emitted from the loop only."""
        if not on_loop:
            return catalog_for(workspace, config, self.plugins)
        found, settings = catalog_for(workspace, config, self.plugins, self.cache)
        self.warn(found.warnings)
        return found, settings

    def warn(self, lines: list[str]) -> None:
        """Each warning once per run, as a warning notice (the prompt runs again before every call)."""
        if self.handle is None:
            return
        for line in lines:
            if line not in self.shown:
                self.shown.add(line)
                self.handle.notice(line, "warning")

    def prompt(self, workspace: Path, config: Config) -> str | None:
        found, settings = self.catalog(workspace, config)
        return prompt_section(found, settings.max_listed)

    # --- the tool -------------------------------------------------------------------------

    def tool(self) -> Tool:
        """``skill``: read-only, bounded in time (``TOOL_TIMEOUT``) and output; runs in a thread."""
        run = self.run_tool

        def skill(ctx: ToolContext, name: str = "", file: str = "") -> ToolResult:
            """Load a skill (instructions for a task, listed in the system prompt) by name, or a file
            beside it with `file`. With no name, list every skill.

            Args:
                name: the skill's name; empty lists every skill
                file: a file beside the skill's SKILL.md, relative to its folder
            """
            return run({"name": name, "file": file}, ctx)

        made: Tool = crab.tool(name="skill", permission="read", timeout=TOOL_TIMEOUT)(skill)
        return made

    def run_tool(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if ctx.config is None:
            raise ToolError("skill: no configuration in this context")
        found, settings = self.catalog(ctx.workspace, ctx.config, on_loop=False)
        name = str(arguments.get("name") or "").strip()
        if not name:
            return ToolResult(listing(found))
        skill = found.get(name)
        if skill is None:
            raise ToolError(
                f"no skill named {name!r}.{did_you_mean(name, found)} Call skill with no name to list them."
            )
        try:
            relative = str(arguments.get("file") or "").strip()
            text = read_file(skill, relative, settings.max_bytes) if relative else loaded(skill, settings.max_bytes)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        except OSError as exc:
            raise ToolError(f"cannot read skill {name!r}: {exc.strerror or exc}") from None
        return ToolResult(text, details={"skill": skill.name, "source": skill.label})

    # --- the command ----------------------------------------------------------------------

    async def command(self, ctx: CommandContext, args: str) -> CommandResult:
        """``/skill`` lists; ``/skill NAME [request]`` (or ``/skill:NAME``) runs a turn with the skill."""
        found, settings = self.catalog(ctx.handle.workspace, ctx.handle.config)
        name, _, request = args.strip().partition(" ")
        if not name:
            return CommandResult(listing(found))
        skill = found.get(name)
        if skill is None:
            return CommandResult(f"no skill named {name!r}.{did_you_mean(name, found)} Type /skill to list them.", True)
        try:
            text = user_turn(skill, settings.max_bytes, request)
        except OSError as exc:
            return CommandResult(f"cannot read skill {name!r}: {exc.strerror or exc}", is_error=True)
        if not skill.trusted:
            text = self._inert(ctx, f"/skill:{name}", text)
        outcome = await ctx.handle.handle_input(ctx.session, text)
        if outcome.error:  # the turn already showed its error; this keeps the exit status
            return CommandResult(f"/skill:{name}: the turn ended with an error ({outcome.stop})", is_error=True)
        return CommandResult("")

    # --- the user's own commands ------------------------------------------------------------

    def user_commands(self, workspace: Path, config: Config) -> Commands:
        from crab_skills.user_commands import discover

        settings = load_settings(config.plugin_settings(PLUGIN), workspace)
        if not settings.commands:
            return Commands()
        return discover(workspace, config, settings.max_bytes)

    def registered(self, config: Config) -> list[Command]:
        """One router command per command file, as the run's folder has them (the composition root
        builds the agent for the current folder); each is read again when it runs."""
        try:
            found = self.user_commands(Path.cwd(), config)
        except OSError as exc:  # the folder is gone: no commands, and skills keep working
            self._pending_warnings = [f"commands: cannot look for command files: {exc.strerror or exc}"]
            return []
        self._pending_warnings = found.warnings  # shown once the agent can show them (``start``)
        return [self._command(command) for command in found.found.values()]

    def _command(self, command: UserCommand) -> Command:
        name = command.name

        async def run(ctx: CommandContext, args: str) -> CommandResult:
            return await self.run_user_command(ctx, name, args)

        # An untrusted project's file gives way to every plugin's command of its name (a cloned
        # repository must not take /tiny from the user's MCP server); a clash names the file.
        return Command(
            name,
            f"{command.description} ({command.label})",
            run,
            usage=command.hint,
            file=str(command.file),
            gives_way=not command.trusted,
        )

    async def run_user_command(self, ctx: CommandContext, name: str, args: str) -> CommandResult:
        """Send the command's expanded text as the user's prompt, within its ``allowed-tools``."""
        from crab_skills.user_commands import prompt

        handle = ctx.handle
        found = self.user_commands(handle.workspace, handle.config)
        self.warn(found.warnings)
        command = found.found.get(name)
        if command is None:
            return CommandResult(f"/{name}: its command file is gone; type /help for the commands there are", True)
        settings = load_settings(handle.config.plugin_settings(PLUGIN), handle.workspace)
        try:
            text = prompt(command, settings.max_bytes, args)
        except OSError as exc:
            return CommandResult(f"cannot read {command.file}: {exc.strerror or exc}", is_error=True)
        if not command.trusted:
            text = self._inert(ctx, f"/{name}", text)
        model = self._model(ctx, command)
        if model is not None:
            problem = not_configured(handle, ctx.session, name, model)
            if problem is not None:
                return CommandResult(problem, is_error=True)
        stack = self.narrowed.setdefault(ctx.session.id, [])
        if command.allowed is not None:
            stack.append((name, command.allowed))
        try:
            if model is None:
                outcome = await handle.handle_input(ctx.session, text)
            else:
                async with self.models.around(handle, ctx.session, name, model, text):
                    outcome = await handle.handle_input(ctx.session, text)
        finally:
            if command.allowed is not None:
                stack.remove((name, command.allowed))
            if not stack:
                self.narrowed.pop(ctx.session.id, None)
        if outcome.error:  # the turn already showed its error; this keeps the exit status
            return CommandResult(f"/{name}: the turn ended with an error ({outcome.stop})", is_error=True)
        return CommandResult("")

    @staticmethod
    def _inert(ctx: CommandContext, what: str, text: str) -> str:
        """An untrusted project's text with its ``@server:uri`` references quoted (one notice)."""
        from crab_skills.inert import inert, untrusted_notice

        text, count = inert(text)
        if count:
            ctx.handle.notice(untrusted_notice(what, count), "warning")
        return text

    @staticmethod
    def _model(ctx: CommandContext, command: UserCommand) -> str | None:
        """The model the command's turn runs on, None for the session's: an untrusted project may not
        choose one (it would route your key and spend your money), so its ``model:`` is one notice."""
        if command.model is None or command.trusted:
            return command.model
        ctx.handle.notice(
            f"/{command.name} is from a project you have not trusted (crab trust): its model: {command.model} is "
            f"ignored, and it runs on {ctx.handle.session_model(ctx.session)}",
            "warning",
        )
        return None

    async def prompt_submit(self, prompt: str, session_id: str) -> Deny | None:
        """Switch a user command's session to its ``model`` as its turn records its prompt."""
        return await self.models.prompt_submit(prompt, session_id)

    def check_tool(self, call: ToolCall, ctx: ToolContext) -> Deny | None:
        """Refuse a call that a running command's ``allowed-tools`` does not allow (each of the
        running commands must allow it); nothing is ever allowed here that the gate would refuse."""
        for name, allowed in self.narrowed.get(ctx.session_id, ()):
            if not any(entry.permits(call.name, call.arguments) for entry in allowed):
                shown = ", ".join(entry.shown for entry in allowed) or "no tools"
                return Deny(f"/{name} allows only {shown}; {call.name} is not among them, so it was not run")
        return None
