"""The composition root: config layers, plugin host, store, provider and model → one loop ``Agent``;
every front-end builds its agent here, each call its own config, host and plugin objects
(docs/architecture.md#the-composition-root)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from crab._config.core_tables import PERMISSION_MODES
from crab._contracts.errors import CrabError, PluginError, UsageError

if TYPE_CHECKING:
    from crab._contracts.config import Config
    from crab._contracts.interception import AskUser
    from crab._contracts.providers import Provider
    from crab._contracts.questions import AskQuestion
    from crab._contracts.storage import Store
    from crab._contracts.tools import Tool
    from crab._host.plugin_host import PluginHost
    from crab._loop.agent import Agent

PermissionMode = Literal["ask", "yolo", "read-only", "plan"]


@dataclass(frozen=True, slots=True)
class Layers:
    """Which config layers are read: each can be switched off by a program that wants none of them.

    ``settings`` (dotted keys, ``{"crab.max_iterations": 5}``) always apply, last, as the
    caller's own word; ``source`` names them in error messages (``--set`` for the CLI).
    """

    user: bool = True
    project: bool = True
    environment: bool = True
    settings: Mapping[str, Any] | None = None
    source: str = "the program's settings"


@dataclass(frozen=True, slots=True)
class Assembly:
    """What ``assemble`` built: the checked config, the plugin host and the (not yet started) agent."""

    config: Config
    host: PluginHost
    agent: Agent


def config_overrides(
    settings: Mapping[str, Any] | None, *, permissions: str | None = None, store: str | None = None
) -> dict[str, Any]:
    """The caller's dotted settings plus what its permission mode and store name mean in config."""
    overrides = dict(settings or {})
    if permissions is not None:
        if permissions not in PERMISSION_MODES:
            raise UsageError(f"permissions must be one of {', '.join(PERMISSION_MODES)}, not {permissions!r}")
        overrides["crab.permissions"] = permissions
    if store is not None:
        overrides["crab.store"] = store
    return overrides


def require_listed(host: PluginHost, plugins: Sequence[str]) -> None:
    """A plugin a program named that is not installed or failed to load is a ``PluginError``:
    the program asked for exactly these, so going on without one would not be what it asked."""
    for name in plugins:
        record = host.records.get(name)
        if record is not None and record.status in ("missing", "failed"):
            raise PluginError(f"plugin {name} {record.status}: {record.reason}")


def assemble_host(
    *,
    workspace: Path | None = None,
    layers: Layers = Layers(),
    plugins: str | Sequence[str] | None = None,
    objects: Mapping[str, object] | None = None,
    builtins: bool = True,
    tools: Sequence[Tool | Callable[..., Any]] = (),
    permissions: PermissionMode | None = None,
    store: str | None = None,
    strict: bool | None = None,
    require_plugins: bool = False,
) -> tuple[Config, PluginHost]:
    """The config layers and the plugin host of an agent, without the agent (what ``crab mcp serve``'s
    toolbox and ``crab.hooks.collect_hook`` need); ``assemble`` documents the arguments."""
    from crab._assembly.choosing import build_host
    from crab._assembly.function_tools import PLUGIN, FunctionTools, as_tools
    from crab._config.layers import load_config

    config = load_config(
        workspace,
        config_overrides(layers.settings, permissions=permissions, store=store),
        None if layers.environment else {},
        overrides_source=layers.source,
        user=layers.user,
        project=layers.project,
    )
    in_process = dict(objects or {})
    if tools:
        in_process[PLUGIN] = FunctionTools(as_tools(tools))
    listed = None if plugins is None or isinstance(plugins, str) else list(plugins)
    host = build_host(
        config,
        plugins,
        objects=in_process,
        builtins=builtins,
        discover=listed is None or len(listed) > 0,
        strict=strict,
        environment=layers.environment,
    )
    if require_plugins and listed:
        require_listed(host, listed)
    return config, host


def assemble(
    *,
    workspace: Path | None = None,
    layers: Layers = Layers(),
    plugins: str | Sequence[str] | None = None,
    objects: Mapping[str, object] | None = None,
    builtins: bool = True,
    tools: Sequence[Tool | Callable[..., Any]] = (),
    store: Store | str | None = None,
    provider: Provider | str | None = None,
    model: str | Sequence[str] | None = None,
    permissions: PermissionMode | None = None,
    ask: AskUser | None = None,
    question: AskQuestion | None = None,
    local: bool = True,
    strict: bool | None = None,
    require_plugins: bool = False,
    check_model: bool = True,
    on_setup_notice: Callable[[str], object] | None = None,
    remember_failures: bool = False,
    isolate: str | None = None,
) -> Assembly:
    """Build one agent (not started: ``await agent.start()``); raises ``crab.errors`` on bad setup.

    ``plugins``: entry-point names that load (exactly these; ``[]`` none) or None for the config's
    choice; ``objects``: in-process plugin objects by name; ``tools``: a program's functions,
    registered as the plugin ``program-tools``. ``store`` and ``provider`` are objects or names
    (None: the config's choice); ``model`` may be ``provider/model``, or several of them (a list or
    a comma-separated string) tried in order (``crab._assembly.fallback``). ``permissions`` sets the
    gate's mode; ``ask`` answers its questions (None: nobody can, so non-read calls are refused
    in ``ask`` mode); ``question`` asks the user a tool's question (None: nobody can answer, so
    such a tool says so at once). ``require_plugins`` makes a listed plugin that did not load an error.
    ``check_model=False`` skips a provider object's ``check`` (the test kit's agents use the model
    id ``scripted`` with any provider a test hands them).
    ``isolate`` is the user's ``--worktree [NAME]`` (``""``: no name): a plugin's ``crab_workspace``
    must give a folder to work in instead of ``workspace``, or ``UsageError``; with None a plugin may
    still choose one (its own setting).
    ``on_setup_notice`` gets the config notices and plugin failures when setup fails before an agent
    exists to show them. ``remember_failures`` (the CLI's runs) keeps the plugin failures the run
    meets in crab's home for ``crab plugins list`` (``crab._assembly.last_run``).
    """
    from crab._assembly.choosing import LAST_RUN, FailureMemory, choose_store
    from crab._assembly.choosing import remember_failures as remember
    from crab._assembly.fallback import choose_models
    from crab._assembly.thinking import PLUGIN as THINKING
    from crab._assembly.thinking import ThinkingRoute
    from crab._loop.agent import Agent

    where = workspace or Path.cwd()
    config, host = assemble_host(
        workspace=where,
        layers=layers,
        plugins=plugins,
        objects=objects,
        builtins=builtins,
        tools=tools,
        permissions=permissions,
        store=store if isinstance(store, str) else None,
        strict=strict,
        require_plugins=require_plugins,
    )
    if remember_failures:
        # Before anything builds the registries: a plugin added after that rebuilds them, and the
        # provider objects the agent was given would no longer be the registry's.
        host.add_builtin(LAST_RUN, FailureMemory(host, config))
    thinking = ThinkingRoute()
    host.add_builtin(THINKING, thinking)
    try:
        if provider is None or isinstance(provider, str):
            chosen, model_id = choose_models(host, config, provider, model)
        else:
            if model is not None and not isinstance(model, str):
                raise UsageError("a provider object takes one model id, not a list: name the models provider/model")
            chosen, model_id = provider, model or _first_model(provider)
            if check_model:
                chosen.check(model_id)
        chosen_store = store if store is not None and not isinstance(store, str) else choose_store(host, config)
        # last: a plugin's folder (a worktree) is made only once nothing else of the setup can fail
        where = choose_workspace(host, config, where, isolate)
    except CrabError as exc:
        if remember_failures:
            remember(host, config, complete=False)  # no start-up ran: what failed so far, nothing cleared
        if on_setup_notice is not None:
            # The plugin failures too: a provider plugin that failed to load is why none is loaded
            # (not the one that is the error itself, under CRAB_STRICT_PLUGINS=1).
            failures = [failure.line for failure in host.failures if failure.line != str(exc)]
            for line in [*config.notices(), *failures]:
                on_setup_notice(line)
        raise
    from crab._builtin.shell import shell_input  # `!cmd`, core's own: see crab/_builtin/shell.py

    agent = Agent(
        host,
        config,
        store=chosen_store,
        provider=chosen,
        model=model_id,
        workspace=where,
        ask=ask,
        local=local,
        question=question,
        shell=shell_input,
    )
    thinking.agent = agent
    return Assembly(config, host, agent)


def choose_workspace(host: PluginHost, config: Config, workspace: Path, request: str | None) -> Path:
    """The folder the run works in: the first one a plugin's ``crab_workspace`` gives, else
    ``workspace``; ``UsageError`` when the user asked for one (``request``) and none was given,
    or when a plugin failed to choose (asked or set up to: its settings may put every run in a
    worktree, and the folder it failed to leave is never worked in instead)."""
    before = len(host.failures)
    for _plugin, chosen in host.dispatch.collect("crab_workspace", workspace=workspace, request=request, config=config):
        if isinstance(chosen, str | Path):
            return Path(chosen)
    failed = [failure.line for failure in host.failures[before:]]
    if failed:
        raise UsageError(failed[0])  # the failure's own line, shown once (not again as a notice)
    if request is None:
        return workspace
    raise UsageError(
        "--worktree: no loaded plugin gives a separate workspace (crab_workspace); "
        "see `crab plugins list`, or run without --worktree"
    )


def _first_model(provider: Provider) -> str:
    from crab._contracts.errors import ConfigError

    known = provider.models()
    if not known:
        raise ConfigError(f"no model chosen for provider {provider.name}: pass model=")
    return known[0].id
