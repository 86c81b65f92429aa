"""The typer application: every ``crab`` sub-command's signature; the work lives in sibling modules,
each imported when its command runs, so ``crab --help`` stays fast with many plugins installed."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from crab._cli.options import RunOptions

app = typer.Typer(
    name="crab",
    help="crab: a small agent in which everything is a plugin. Bare `crab` starts `crab chat`.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=False,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
plugins_app = typer.Typer(help="List, enable, disable, install and uninstall plugins.", rich_markup_mode=None)
config_app = typer.Typer(help="Show and change configuration (comments in the TOML survive).", rich_markup_mode=None)
app.add_typer(plugins_app, name="plugins")
app.add_typer(config_app, name="config")
plugin_app = typer.Typer(help="Create a new plugin package from crab's template.", rich_markup_mode=None)
app.add_typer(plugin_app, name="plugin")


class Output(StrEnum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


PluginsOpt = Annotated[
    str | None, typer.Option("--plugins", help="Comma list of plugins to load (overrides config; '' = none).")
]
ProviderOpt = Annotated[str | None, typer.Option("--provider", help="Provider name (see `crab models`).")]
ModelOpt = Annotated[str | None, typer.Option("--model", "-m", help="Model id, or provider/model.")]
YoloOpt = Annotated[bool, typer.Option("--yolo", help="Allow every tool call without asking.")]
ReadOnlyOpt = Annotated[bool, typer.Option("--read-only", help="Refuse write and exec tool calls.")]
WorktreeOpt = Annotated[
    str | None,
    typer.Option(
        "--worktree",
        "-w",
        metavar="[NAME]",
        help="Work in a fresh git worktree on a branch of its own (crab-worktree); NAME names it.",
    ),
]
PlanOpt = Annotated[bool, typer.Option("--plan", help="Plan mode: read tools only until you approve the model's plan.")]
ContinueOpt = Annotated[bool, typer.Option("--continue", "-c", help="Continue the latest session of this folder.")]
SessionOpt = Annotated[str | None, typer.Option("--session", help="Continue the session with this id.")]
ResumeOpt = Annotated[
    str | None,
    typer.Option(
        "--resume",
        "-r",
        metavar="[ID]",
        help="Resume a session of this folder: -r ID directly, -r alone picks one from a list.",
    ),
]
StoreOpt = Annotated[str | None, typer.Option("--store", help="Session store (memory, jsonl, sqlite…).")]
SetOpt = Annotated[list[str] | None, typer.Option("--set", help="Override a config key for this run: KEY=VALUE.")]
ScopeProject = Annotated[bool, typer.Option("--project", help="Write the project's .crab/config.toml.")]
ScopeUser = Annotated[bool, typer.Option("--user", help="Write the user's ~/.crab/config.toml.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
RendererOpt = Annotated[
    str | None, typer.Option("--renderer", help="A renderer's name for text output (see `crab plugins list`).")
]
ThinkingOpt = Annotated[
    str | None,
    typer.Option("--thinking", metavar="LEVEL", help="How hard the model thinks: off, low, medium or high."),
]


def _run_options(given: dict[str, Any]) -> RunOptions:
    """The ``RunOptions`` of a command that takes the shared run/chat options (its ``locals()``)."""
    from crab._cli.options import RunOptions

    return RunOptions(
        plugins=given["plugins"],
        provider=given["provider"],
        model=given["model"],
        yolo=given["yolo"],
        read_only=given["read_only"],
        plan=given.get("plan", False),
        worktree=given.get("worktree"),
        continue_latest=given["continue_"],
        session=given["session"],
        store=given["store"],
        settings=(*(given["set_"] or ()), *((f"crab.thinking={given['thinking']}",) if given.get("thinking") else ())),
        renderer=given["renderer"],
        resume=given.get("resume"),
    )


def _version(value: bool) -> None:
    if value:
        from crab._cli.version import version_lines

        typer.echo("\n".join(version_lines()))
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    plugins: PluginsOpt = None,
    yolo: YoloOpt = False,
    read_only: ReadOnlyOpt = False,
    plan: PlanOpt = False,
    worktree: WorktreeOpt = None,
    continue_: ContinueOpt = False,
    session: SessionOpt = None,
    store: StoreOpt = None,
    set_: SetOpt = None,
    renderer: RendererOpt = None,
    resume: ResumeOpt = None,
    thinking: ThinkingOpt = None,
) -> None:
    """Bare ``crab`` is ``crab chat`` and takes its options (``crab -m mock/tour``, as hints say)."""
    from crab._cli.options import RunOptions

    options = _run_options(locals())
    if ctx.invoked_subcommand is None:
        from crab._cli.chat import chat

        chat(options)
    elif options != RunOptions():
        from crab._contracts.errors import UsageError

        raise UsageError(
            f"options before the command are `crab chat`'s: put them after it (crab {ctx.invoked_subcommand} …)"
        )


@app.command()
def run(
    prompt: Annotated[str, typer.Argument(help="What to ask; '-' reads it from stdin.")],
    output: Annotated[Output, typer.Option("--output", "-o", help="text, json (one object) or jsonl (events).")] = (
        Output.text
    ),
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    plugins: PluginsOpt = None,
    yolo: YoloOpt = False,
    read_only: ReadOnlyOpt = False,
    plan: PlanOpt = False,
    worktree: WorktreeOpt = None,
    continue_: ContinueOpt = False,
    session: SessionOpt = None,
    store: StoreOpt = None,
    set_: SetOpt = None,
    renderer: RendererOpt = None,
    attach: Annotated[
        list[Path] | None,
        typer.Option("--attach", "-a", metavar="FILE", help="Send this image (PNG, JPEG, GIF, WebP) too; repeatable."),
    ] = None,
    thinking: ThinkingOpt = None,
    output_schema: Annotated[
        Path | None,
        typer.Option("--output-schema", metavar="FILE", help="The answer must match this JSON schema; print its JSON."),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option("--engine", metavar="NAME", help="Run the turn on this turn engine a plugin offers."),
    ] = None,
) -> None:
    """Run one agent turn and exit: 0 done, 1 model or tool failure, 2 usage or config error, 130 interrupted."""
    from crab._cli.run import run_once

    options = _run_options(locals())
    raise typer.Exit(
        run_once(prompt, output.value, options, attach=tuple(attach or ()), output_schema=output_schema, engine=engine)
    )


@app.command()
def chat(
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    plugins: PluginsOpt = None,
    yolo: YoloOpt = False,
    read_only: ReadOnlyOpt = False,
    plan: PlanOpt = False,
    worktree: WorktreeOpt = None,
    continue_: ContinueOpt = False,
    session: SessionOpt = None,
    store: StoreOpt = None,
    set_: SetOpt = None,
    renderer: RendererOpt = None,
    resume: ResumeOpt = None,
    thinking: ThinkingOpt = None,
) -> None:
    """Talk with the agent: Ctrl-C stops the running turn, Ctrl-D leaves, /help lists commands."""
    from crab._cli.chat import chat as run_chat

    run_chat(_run_options(locals()))


@app.command()
def tools(
    plugins: PluginsOpt = None,
    as_json: JsonOpt = False,
    tokens: Annotated[
        bool, typer.Option("--tokens", help="Schema tokens per request: full against progressive (start-up tools too).")
    ] = False,
) -> None:
    """List the tools the model can use, with their permission class and plugin."""
    from crab._cli.info import list_tools, tool_tokens

    if tokens:
        tool_tokens(plugins, as_json)
    else:
        list_tools(plugins, as_json)


@app.command()
def models(plugins: PluginsOpt = None, as_json: JsonOpt = False) -> None:
    """List configured and known models with context windows and prices."""
    from crab._cli.info import list_models

    list_models(plugins, as_json)


@app.command()
def doctor(plugins: PluginsOpt = None, provider: ProviderOpt = None, model: ModelOpt = None) -> None:
    """Check config, plugins, providers and the store; print each problem with its fix."""
    from crab._cli.doctor import run_doctor

    raise typer.Exit(run_doctor(plugins, provider, model))


@app.command()
def serve(
    channel: Annotated[
        list[str] | None,
        typer.Argument(help="Channel names (see `crab plugins list`); none given: those listed in [serve] channels."),
    ] = None,
    plugins: PluginsOpt = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    store: StoreOpt = None,
    set_: SetOpt = None,
) -> None:
    """Run channel plugins (chat bots, a scheduler) until stopped; SIGTERM lets running turns finish."""
    from crab._cli.options import RunOptions
    from crab._cli.serve import serve_channels

    options = RunOptions(plugins=plugins, provider=provider, model=model, store=store, settings=tuple(set_ or ()))
    raise typer.Exit(serve_channels(channel or [], options))


@app.command()
def trust(
    path: Annotated[Path | None, typer.Argument(help="The project folder (default: this one).")] = None,
    show_list: Annotated[bool, typer.Option("--list", help="List trusted projects.")] = False,
) -> None:
    """Trust a project's .crab/config.toml, so its trust-only keys apply (until the file changes)."""
    from crab._cli.trust_cmd import trust_project

    trust_project(path, show_list)


@app.command()
def untrust(
    path: Annotated[Path | None, typer.Argument(help="The project folder (default: this one).")] = None,
) -> None:
    """Stop trusting a project's .crab/config.toml."""
    from crab._cli.trust_cmd import untrust_project

    untrust_project(path)


@plugins_app.command("list")
def plugins_list(plugins: PluginsOpt = None, as_json: JsonOpt = False) -> None:
    """Every installed plugin: status, distribution, version and hooks, as loading finds them."""
    from crab._cli.plugins_cmd import list_plugins

    raise typer.Exit(list_plugins(plugins, as_json))


@plugins_app.command("enable")
def plugins_enable(name: str, project: ScopeProject = False, user: ScopeUser = False) -> None:
    """Enable a plugin in the config file (project's if there is one, else the user's)."""
    from crab._cli.plugins_cmd import set_enabled

    set_enabled(name, True, project, user)


@plugins_app.command("disable")
def plugins_disable(name: str, project: ScopeProject = False, user: ScopeUser = False) -> None:
    """Disable a plugin in the config file; a disabled plugin is never imported."""
    from crab._cli.plugins_cmd import set_enabled

    set_enabled(name, False, project, user)


@plugin_app.command("new")
def plugin_new(
    name: Annotated[str, typer.Argument(help="The plugin's name, e.g. word-count (distribution crab-NAME).")],
    kind: Annotated[
        str, typer.Option("--kind", help="tool, provider, store, channel, renderer or command: the hook it shows.")
    ] = "tool",
    folder: Annotated[Path | None, typer.Option("--dir", help="Folder to create (default: ./crab-NAME).")] = None,
) -> None:
    """Create a complete plugin package (pyproject, hooks, tests, README) in a new folder."""
    from crab._cli.plugin_new import new_plugin

    new_plugin(name, kind, folder)


@plugins_app.command("install")
def plugins_install(
    specs: Annotated[list[str], typer.Argument(help="Distributions, folders or wheel files, as pip takes them.")],
    editable: Annotated[bool, typer.Option("--editable", "-e", help="Install folders in editable mode.")] = False,
    upgrade: Annotated[bool, typer.Option("--upgrade", "-U", help="Upgrade what is installed.")] = False,
) -> None:
    """Install plugins with pip into crab's own environment and enable them in your user config."""
    from crab._cli.plugins_cmd import install_plugins

    install_plugins(specs, editable, upgrade)


@plugins_app.command("uninstall")
def plugins_uninstall(
    names: Annotated[list[str], typer.Argument(help="Plugin names (see `crab plugins list`) or distributions.")],
) -> None:
    """Uninstall plugins with pip and remove them from your user config's plugin lists."""
    from crab._cli.plugins_cmd import uninstall_plugins

    uninstall_plugins(names)


@config_app.command("show")
def config_show(as_json: JsonOpt = False) -> None:
    """The merged configuration (defaults, user, project, environment)."""
    from crab._cli.config_cmd import show

    show(as_json)


@config_app.command("keys")
def config_keys(plugins: PluginsOpt = None, as_json: JsonOpt = False) -> None:
    """Every key of [crab] and of each loaded plugin's table: type, default, trust-only, meaning."""
    from crab._cli.config_cmd import keys

    keys(plugins, as_json)


@config_app.command("get")
def config_get(key: str) -> None:
    """One value by dotted key (crab.model, plugins.enabled)."""
    from crab._cli.config_cmd import get

    get(key)


@config_app.command("set")
def config_set(key: str, value: str, project: ScopeProject = False, user: ScopeUser = False) -> None:
    """Set a dotted key; VALUE is read as TOML (true, 3, [\"a\"]) or else as a string."""
    from crab._cli.config_cmd import set_value

    set_value(key, value, project, user)


@config_app.command("path")
def config_path() -> None:
    """Where the user and project config files are."""
    from crab._cli.config_cmd import paths

    paths()


_extended: set[str] = set()
_sessions_real = False
"""Whether the ``sessions`` group added is the real one (not the help-only stand-in)."""
_plugin_commands_for: tuple[object, ...] | None = None
"""What the plugins' sub-commands were added under (folder, crab's variables, the config files
and the trust file as they were): their ``crab_cli`` got that config, so another one in this
process (``crab.testing.run_cli``, after ``crab plugins disable`` say) adds them again from
crab's own commands."""
_own_commands: tuple[list[Any], list[Any]] | None = None
_hidden_by: Exception | None = None
"""The config's error that kept the plugins' sub-commands out (a command not found is told as it)."""


def _config_inputs() -> tuple[object, ...]:
    from crab._config import environ
    from crab._config.paths import find_project_dir, user_config_path
    from crab._contracts.errors import CrabError

    try:
        folder = os.getcwd()
    except OSError:  # the folder is gone: the command says so itself
        return ("", environ.crab_variables())
    try:
        files = [user_config_path()]
        project = find_project_dir()
        if project is not None:  # its trust decides what it may set (loading it imports this too)
            from crab._config.trust import trust_file

            files += [project / "config.toml", trust_file()]
    except CrabError:  # no home folder at all: the command says so itself
        files = []
    return (folder, environ.crab_variables(), tuple((str(f), _content(f)) for f in files))


def _content(path: Path) -> bytes | None:
    """What the file holds (a rewrite within the clock's tick keeps its mtime); None if unreadable."""
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None


def _add_plugin_commands() -> None:
    """Let plugins add sub-commands; a broken config or plugin never breaks the CLI itself.

    Only ``crab_cli`` failures are printed here (once); the command's own host reports the rest.
    """
    global _plugin_commands_for, _own_commands, _hidden_by
    from crab._contracts.errors import CrabError, PluginError

    inputs = _config_inputs()
    if _plugin_commands_for == inputs:
        return
    _hidden_by = None
    if _own_commands is None:
        _own_commands = (list(app.registered_commands), list(app.registered_groups))
    else:
        app.registered_commands[:], app.registered_groups[:] = (list(part) for part in _own_commands)
    _plugin_commands_for = inputs

    try:
        from crab._assembly.plugin_choice import choose_plugins
        from crab._config import environ
        from crab._config.layers import load_config
        from crab._host.plugin_host import PluginHost

        config = load_config()
        host = PluginHost(config, strict=False)  # only what crab_cli needs: no built-ins, no registries
        host.load_entry_points(choose_plugins(config))
    except CrabError as exc:
        _plugin_commands_for = None  # the command says what is wrong, each time it runs
        _hidden_by = exc  # and a plugin's command, not added, says it instead of "No such command"
        return
    before = len(host.failures)
    host.dispatch.collect("crab_cli", app=app, config=config)
    if host.failures[before:]:
        _plugin_commands_for = None  # said again by the next run, as a new crab process would
    for failure in host.failures[before:]:
        if environ.strict_plugins():
            raise PluginError(failure.line)
        typer.echo(f"warning: {failure.line}", err=True)


SESSIONS_HELP = "List, show, search, fork, export and migrate sessions."


def _add_sessions(args: Sequence[str]) -> None:
    """``crab sessions`` in the command list. Its commands (and what they import) are added only
    when the command line names it; any other command, ``crab --help`` included, needs just its
    line, so it gets an empty group with the same help (crab --help's module budget)."""
    global _own_commands, _sessions_real
    real = "sessions" in args
    if "sessions" in _extended and (_sessions_real or not real):
        return
    group = typer.Typer(help=SESSIONS_HELP, rich_markup_mode=None)
    if real:
        try:
            from crab._cli.sessions import app as group
        except ImportError:
            return
    app.registered_groups[:] = [info for info in app.registered_groups if info.name != "sessions"]
    app.add_typer(group, name="sessions", help=SESSIONS_HELP)
    if _own_commands is not None:  # restored by _add_plugin_commands: the real group from now on
        groups = [info for info in _own_commands[1] if info.name != "sessions"] + [app.registered_groups[-1]]
        _own_commands = (_own_commands[0], groups)
    _extended.add("sessions")
    _sessions_real = real


RESUME_FLAGS = ("-r", "--resume")
WORKTREE_FLAGS = ("-w", "--worktree")
ROOT_VALUE_OPTIONS = frozenset(
    ("--provider", "--model", "-m", "--plugins", "--session", "--store", "--set", "--renderer", *RESUME_FLAGS)
)
"""The options of bare ``crab`` and ``crab chat`` that take a value (the word after one is no command)."""
RUN_VALUE_OPTIONS = frozenset(("--output", "-o", "--attach", "-a"))
"""``crab run``'s own options that take a value (the word after one is not its prompt)."""


def resume_picker_args(args: Sequence[str]) -> list[str]:
    """``args`` with a ``-r``/``--resume`` of bare ``crab`` or ``crab chat`` that has no value
    (last, or before another option) written ``--resume=``: typer has no option whose value may
    be left out, and an empty id means "show the picker". Other commands' ``-r`` are left alone.
    ``-w``/``--worktree`` without a name is written ``--worktree=`` the same way (bare ``crab``,
    ``crab chat``, and always in ``crab run``, where the next word is the prompt).
    """
    out = list(args)
    command: str | None = None
    index = 0
    while index < len(out):
        token = out[index]
        following = out[index + 1] if index + 1 < len(out) else None
        if token in WORKTREE_FLAGS:
            # a name only where no prompt can follow (bare crab, crab chat): `crab run -w "fix it"`
            # is a prompt, and a run names its worktree with --worktree=NAME
            if command == "run" or following is None or following.startswith("-") or following == "chat":
                out[index] = "--worktree="
            else:
                index += 1
        elif token in RESUME_FLAGS and command != "run":
            if following is None or following.startswith("-") or (command is None and following == "chat"):
                out[index] = "--resume="
            else:
                index += 1  # its value
        elif token in ROOT_VALUE_OPTIONS or (command == "run" and token in RUN_VALUE_OPTIONS):
            index += 1
        elif not token.startswith("-"):
            if command is not None or token not in ("chat", "run"):
                break  # another command's arguments: its options are its own
            command = token
        index += 1
    return out


_NO_PLUGIN_COMMANDS = frozenset(("plugins", "plugin", "doctor", "config", "trust", "untrust"))
"""Commands that must work even when a plugin is broken: no plugin's ``crab_cli`` runs first."""
_CORE_ONLY = frozenset(("run", "chat", "serve"))
"""Core commands that need neither plugins' sub-commands nor ``sessions`` (an agent's own host
loads the plugins): ``crab run`` is what scripts and the tests start most, and building those
costs a plugin host of its own."""


@contextmanager
def _only_command(name: str) -> Iterator[None]:
    """``app`` with only its command ``name`` while the block runs: typer turns every registered
    command into a click command (reading each signature) before it looks at the arguments, and
    the one asked for behaves the same alone (same usage lines, the root callback still runs)."""
    commands, groups = list(app.registered_commands), list(app.registered_groups)
    app.registered_commands[:] = [c for c in commands if c.callback is not None and c.callback.__name__ == name]
    app.registered_groups[:] = []
    try:
        yield
    finally:
        app.registered_commands[:], app.registered_groups[:] = commands, groups


def _own_command(args: Sequence[str]) -> bool:
    """Whether the first word of ``args`` that is no option names one of crab's own commands (a
    sub-command missing under one of them is no plugin's)."""
    names = {info.name for info in app.registered_commands} | {info.name for info in app.registered_groups}
    return any(word in names for word in args if not word.startswith("-"))


def _no_such_command(error: Exception) -> bool:
    """Whether ``error`` is click's "No such command" (typer's click has no class of its own for it)."""
    from crab._cli.errors import is_click_error

    return is_click_error(error, "UsageError") and str(error).startswith("No such command")


def run_app(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code. Errors a user can meet print one line."""
    from crab._contracts.errors import CrabError

    args = resume_picker_args(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] in _CORE_ONLY:
            with _only_command(args[0]):
                code = app(args=args, prog_name="crab", standalone_mode=False)
        else:
            _add_sessions(args)
            if not (args and args[0] in _NO_PLUGIN_COMMANDS):
                _add_plugin_commands()
            # Not standalone: click would print a usage block for a usage error; crab prints one line.
            code = app(args=args, prog_name="crab", standalone_mode=False)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except CrabError as exc:
        from crab._cli.errors import error_line

        typer.echo(error_line(f"crab: {exc}"), err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        from crab._cli.errors import is_click_error, usage_line

        if _hidden_by is not None and _no_such_command(exc) and not _own_command(args):
            from crab._cli.errors import error_line

            typer.echo(error_line(f"crab: {_hidden_by}"), err=True)  # the command may be a plugin's
            return int(getattr(_hidden_by, "exit_code", 2))
        if is_click_error(exc, "ClickException"):
            typer.echo(usage_line(exc), err=True)
            return int(getattr(exc, "exit_code", 2))
        if is_click_error(exc, "Abort"):
            typer.echo("crab: aborted", err=True)
            return 1
        raise
    return code if isinstance(code, int) and not isinstance(code, bool) else 0
