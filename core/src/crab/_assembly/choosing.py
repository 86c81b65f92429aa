"""Choosing each part of an agent: the plugin host, store, provider and renderer; the composition root
puts them together, CLI commands needing one part call them directly. Free of typer and ``crab._cli``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from crab._assembly.plugin_choice import choose_plugins, parse_plugin_list
from crab._contracts.config import Config, ConfigTable
from crab._contracts.errors import ConfigError, StoreError, UsageError
from crab._contracts.providers import Provider
from crab._contracts.renderers import Renderer, RendererSpec, RenderTarget
from crab._contracts.storage import SessionInfo, Store
from crab._host.hookspecs import hookimpl
from crab._host.plugin_host import PluginHost

if TYPE_CHECKING:
    from crab._loop.agent import Agent


def build_host(
    config: Config,
    plugins: str | Sequence[str] | None = None,
    *,
    objects: Mapping[str, object] | None = None,
    builtins: bool = True,
    discover: bool = True,
    validate: bool = True,
    strict: bool | None = None,
    environment: bool = True,
) -> PluginHost:
    """Core's built-in plugins, the chosen installed ones, then ``objects`` (in-process plugins).

    ``plugins`` is ``--plugins`` text or a program's list of entry-point names: exactly those load
    (``[]``: none); None lets ``CRAB_PLUGINS`` (unless ``environment`` is off) or the config choose.
    ``discover=False`` reads no package metadata at all (a program or test with only ``objects``).
    With ``validate`` every declared table is checked now (``ConfigError``, exit 2, before any
    registration hook runs); without it, call ``apply_declarations`` to check later. ``strict``
    overrides ``CRAB_STRICT_PLUGINS`` (the diagnostic commands collect every failure first).
    """
    from crab._assembly.registries import Registries
    from crab._builtin.core_plugin import register_builtins

    host = PluginHost(config, strict=strict if strict is not None or environment else False)
    host.registries = Registries(host)
    if builtins:
        register_builtins(host)
    chosen = (
        parse_plugin_list(plugins) if isinstance(plugins, str) else (list(plugins) if plugins is not None else None)
    )
    if discover:
        source = "--plugins" if isinstance(plugins, str) else "the program's plugins list"
        host.load_entry_points(choose_plugins(config, chosen, None if environment else {}, source))
    elif chosen == [] and not isinstance(plugins, str):
        host.unread_source = "the program's plugins list"
    host.load_objects(objects or {})
    if validate:
        apply_declarations(host, config)
    return host


def declared_tables(host: PluginHost) -> list[ConfigTable]:
    """Every loaded plugin's ``crab_config_table``; a plugin returning something else is marked failed."""
    tables: list[ConfigTable] = []
    for name, table in host.dispatch.collect("crab_config_table"):
        if table is None:
            continue
        if not isinstance(table, ConfigTable):
            host.fail(name, f"crab_config_table returned {type(table).__name__}, expected a crab.ConfigTable")
        elif table.name != name:
            host.fail(name, f"crab_config_table declared [plugins.{table.name}], but the plugin is named {name!r}")
        else:
            tables.append(table)
    return tables


def apply_declarations(host: PluginHost, config: Config) -> None:
    """Check every plugin's table against its declaration (filling defaults) and arrange for the
    config notices (ignored trust-only keys, unknown keys) to be shown once when an agent starts."""
    config.resolve(declared_tables(host), plugins=host.records)
    if NOTICES not in host.records:
        host.add_builtin(NOTICES, ConfigNotices(config))


NOTICES = "crab-config"
"""The built-in plugin that shows config notices (a name no installed plugin is likely to take)."""


class ConfigNotices:
    """Shows ``Config.notices()`` as warning notice events when the agent starts (so jsonl has them)."""

    def __init__(self, config: Config) -> None:
        self.config = config

    @hookimpl
    def crab_startup(self, agent: Any) -> None:
        emit_config_notices(self.config, agent.notice)


def emit_config_notices(config: Config, notice: Callable[[str, str], object]) -> None:
    """The one place config warnings are shown: each line once, as a warning."""
    for line in config.notices():
        notice(line, "warning")


LAST_RUN = "last-run"
"""The built-in plugin that remembers a run's plugin failures for ``crab plugins list``."""


def remember_failures(host: PluginHost, config: Config, *, complete: bool) -> None:
    """Keep what this host's plugins met (``crab._assembly.last_run``), secrets masked, in crab's home;
    ``complete`` when every hook a run calls was called, so a plugin that worked clears its entry."""
    from crab._assembly.last_run import failures_file, remember
    from crab._config import environ
    from crab._contracts.errors import CrabError
    from crab._secrets.keys import known_secrets
    from crab._secrets.redaction import Redactor

    try:
        path = failures_file(environ.crab_home())
    except CrabError:  # no home folder at all: nowhere to keep it, and the run said each failure
        return
    remember(path, host.records, complete=complete, redact=Redactor(known_secrets(config)).text)


class FailureMemory:
    """Remembers the run's plugin failures when the agent closes, after every other plugin's
    ``crab_shutdown`` (core's ``trylast``), so start-up and shutdown failures are in it too."""

    def __init__(self, host: PluginHost, config: Config) -> None:
        self.host = host
        self.config = config

    @hookimpl(trylast=True)
    def crab_shutdown(self) -> None:
        remember_failures(self.host, self.config, complete=True)


def store_name(host: PluginHost, config: Config, name: str | None = None) -> str:
    """``name``, else ``[crab] store``, else the first persistent store in plugin order, else memory.

    Installing a store plugin is enough to keep sessions; config picks among several. A store
    whose ``by_name_only`` attribute is true (a database server that needs a DSN) is never that
    default: it is used only when named.
    """
    if name:
        return name
    configured = config.get("crab.store")
    if configured:
        return str(configured)
    persistent = [
        n for n, store in host.registry("stores").items() if n != "memory" and not getattr(store, "by_name_only", False)
    ]
    return persistent[0] if persistent else "memory"


def choose_store(host: PluginHost, config: Config, name: str | None = None) -> Store:
    stores: dict[str, Store] = host.registry("stores")
    wanted = store_name(host, config, name)
    if wanted not in stores:
        raise ConfigError(missing_store(host, wanted, stores))
    return stores[wanted]


def missing_store(host: PluginHost, wanted: str, stores: Mapping[str, Store]) -> str:
    """Why no store named ``wanted`` is loaded, and what to do: load the installed plugin that likely
    offers it (it is disabled, not listed, or failed), pick a loaded store, or install one."""
    from crab._assembly.not_loaded import explain, likely_offering, unloaded
    from crab._values.router import did_you_mean

    loaded = f"Loaded: {', '.join(sorted(stores))}"
    others = unloaded(host)
    likely = likely_offering(others, wanted)
    if likely:
        return f"no store named {wanted!r} is loaded: {explain(likely)}. {loaded}."
    hint = did_you_mean(wanted, stores)
    if others:
        return (
            f"no store named {wanted!r} is loaded.{hint} {loaded}; {explain(others)}: load the one that offers it, "
            "or set [crab] store to a loaded one."
        )
    install = "Install one (pip install crab-tape-jsonl) or set [crab] store."
    return f"no store named {wanted!r} is loaded.{hint} {loaded}. {install}"


async def require_session(store: Store, session_id: str) -> SessionInfo:
    """The header of a session the user named; an unknown id is a usage error (exit 2)."""
    try:
        return await store.get_session(session_id)
    except StoreError as exc:
        raise UsageError(f"{exc} (see `crab sessions list`)") from None


def unusable_store(exc: StoreError) -> ConfigError:
    """A store that cannot open is a setup problem like a bad config value: exit 2, nothing ran."""
    return ConfigError(f"{exc} (fix the store's path in config, or pick another with --store NAME)")


async def start_agent(agent: Agent) -> None:
    """``agent.start()``, with a store that cannot open reported as ``unusable_store``."""
    try:
        await agent.start()
    except StoreError as exc:
        raise unusable_store(exc) from None


@asynccontextmanager
async def open_store(config: Config, name: str | None = None, host: PluginHost | None = None) -> AsyncIterator[Store]:
    """The configured (or named) store, opened, and closed again afterwards."""
    host = host or build_host(config)
    store = choose_store(host, config, name)
    try:
        await store.open()
    except StoreError as exc:
        raise unusable_store(exc) from None
    try:
        yield store
    finally:
        await store.close()


def split_model(model: str | None, providers: Mapping[str, Provider]) -> tuple[str | None, str | None]:
    """``openai/gpt-4.1-mini`` → (``openai``, ``gpt-4.1-mini``) when ``openai`` is a provider."""
    if model and "/" in model:
        prefix, rest = model.split("/", 1)
        if prefix in providers:
            return prefix, rest
    return None, model


def choose_provider(
    host: PluginHost, config: Config, provider: str | None = None, model: str | None = None
) -> tuple[Provider, str]:
    """The provider and model for a run; raises ``ConfigError`` with what to do when unclear."""
    from crab._values.router import did_you_mean

    providers: dict[str, Provider] = host.registry("providers")
    flag_provider, flag_model = split_model(model, providers)
    config_provider, config_model = split_model(config.get("crab.model"), providers)
    name = provider or flag_provider or config.get("crab.provider") or config_provider
    if not name:
        if len(providers) == 1:
            name = next(iter(providers))
        elif not providers:
            raise ConfigError(no_provider(host, model or config.get("crab.model")))
        else:
            raise ConfigError(
                f"choose a provider with --provider NAME or [crab] provider (loaded: {', '.join(sorted(providers))})"
            )
    if name not in providers:
        from crab._assembly.not_loaded import explain, likely_offering, unloaded

        likely = likely_offering(unloaded(host), name)
        why = f": {explain(likely)}." if likely else f".{did_you_mean(name, providers)}"
        raise ConfigError(
            f"no provider named {name!r} is loaded{why} "
            f"Loaded: {', '.join(sorted(providers)) or 'none'} (see `crab plugins list`)."
        )
    chosen = providers[name]
    configured_for = config_provider or config.get("crab.provider")
    model_id = flag_model or (config_model if configured_for in (None, name) else None)
    if not model_id:
        known = chosen.models()
        if not known:
            raise ConfigError(f"no model chosen for provider {name}: pass --model or set [crab] model")
        model_id = known[0].id
    chosen.check(model_id)
    return chosen, model_id


def no_provider(host: PluginHost, model: str | None = None) -> str:
    """Why no provider plugin is loaded: installed ones that did not load (the one ``model``'s
    ``provider/`` prefix names first), else which to install."""
    from crab._assembly.not_loaded import explain, likely_offering, unloaded

    others = unloaded(host)
    prefix = model.split("/", 1)[0] if model and "/" in model else ""
    likely = (likely_offering(others, prefix) if prefix else []) or likely_offering(others, "provider")
    if likely:
        return f"no provider plugin is loaded: {explain(likely)}"
    return (
        "no provider plugin is loaded: pip install crab-provider-openai (or crab-provider-mock "
        "for a scripted run), then check `crab plugins list`"
    )


def default_renderer(host: PluginHost, renderers: Mapping[str, RendererSpec], *, chat: bool = False) -> str:
    """The first renderer offered by a plugin that is not core's own, else ``plain``.

    Outside ``crab chat`` a renderer marked ``interactive`` (made for a person at a terminal) is
    passed over, so installing one does not change what ``crab run`` prints.
    """
    builtin = {name for name, record in host.records.items() if record.status == "builtin"}
    offered = [
        name for name, spec in renderers.items() if spec.plugin not in builtin and (chat or not spec.interactive)
    ]
    return offered[0] if offered else "plain"


def renderer_spec(host: PluginHost, config: Config, name: str | None, *, chat: bool = False) -> RendererSpec:
    """The named renderer (``--renderer``), else ``[crab] renderer``, else the default
    (``default_renderer``); an unknown name is a ``ConfigError`` (exit 2) with a did-you-mean."""
    renderers: dict[str, RendererSpec] = host.registry("renderers")
    wanted = name or config.get("crab.renderer") or default_renderer(host, renderers, chat=chat)
    if wanted not in renderers:
        from crab._values.router import did_you_mean

        raise ConfigError(
            f"no renderer named {wanted!r} is loaded.{did_you_mean(wanted, renderers)} "
            f"Available: {', '.join(sorted(renderers))} (see `crab plugins list`)."
        )
    return renderers[wanted]


def terminal_target(agent: Agent, *, color: bool | None = None) -> RenderTarget:
    """A renderer's target on this process's stdout and stderr, for ``agent``'s model and window;
    ``color`` defaults to both streams being terminals."""
    import sys

    shown = sys.stdout.isatty() and sys.stderr.isatty() if color is None else color
    return RenderTarget(
        out=sys.stdout, err=sys.stderr, color=shown, model=agent.model, context_window=agent.context.known_window()
    )


def choose_renderer(
    host: PluginHost, config: Config, name: str | None, target: RenderTarget, *, chat: bool = False
) -> Renderer:
    """The named renderer, else ``[crab] renderer``, else the first one an installed plugin offers
    (in plugin order; for ``crab run`` the first that is not ``interactive``), else core's ``plain``:
    installing a renderer plugin is enough to use it."""
    renderer: Renderer = renderer_spec(host, config, name, chat=chat).create(target)
    return renderer
