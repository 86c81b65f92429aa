"""``crab doctor``: check config, plugins, providers, store, renderer, ``[serve]`` channels and
instruction files; each problem with its fix."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import typer

from crab._contracts.errors import CrabError

if TYPE_CHECKING:
    from crab._contracts.config import Config, TrustState
    from crab._host.plugin_host import PluginHost


def _ok(text: str) -> None:
    typer.echo(f"ok    {text}")


def _bad(text: str) -> None:
    typer.echo(f"FAIL  {text}")


def _note(text: str) -> None:
    typer.echo(f"note  {text}")


def _check_tables(host: PluginHost, config: Config) -> int:
    """Plugin tables against their declarations, then the project's trust; returns failures."""
    from crab._assembly.choosing import apply_declarations

    failures = 0
    try:
        apply_declarations(host, config)
    except CrabError as exc:
        _bad(f"config: {exc}")
        failures += 1
    for line in config.warnings:
        _note(line)
    state = config.trust or _project_trust()
    if state is None:
        _ok("trust: no project config here or above (only your own config applies)")
    elif state.trusted:
        _ok(f"trust: {state.describe()}")
    else:
        _note(f"trust: {state.describe()}")
        if config.ignored:
            _note(f"trust: ignored from the project config: {', '.join(config.ignored)}")
    return failures


def _project_trust() -> TrustState | None:
    """The project's trust when the config could not be loaded (a broken file still has a state)."""
    from crab._config.paths import find_project_dir
    from crab._config.trust import state_for

    found = find_project_dir()
    if found is None:
        return None
    try:
        return state_for(found / "config.toml", (found / "config.toml").read_bytes())
    except OSError:
        return None


def _check_serve(host: PluginHost, config: Config) -> int:
    """The channels ``[serve] channels`` names, checked as ``crab serve`` would before starting
    them (loaded, and each channel's own ``check()``: a bot's token…); returns failures."""
    from crab._cli.serve import chosen_channels

    configured = config.get("serve.channels") or []
    if not configured:
        return 0
    try:
        channels = chosen_channels([], configured, host.registry("channels"))
        for channel in channels.values():
            check = getattr(channel, "check", None)
            if callable(check):
                check()
    except CrabError as exc:
        _bad(f"serve: {exc}")
        return 1
    _ok(f"serve: {', '.join(channels)} ready to start")
    return 0


def _instructions() -> str:
    """The instruction files the model reads here (AGENTS.md hierarchy), in prompt order."""
    from pathlib import Path

    from crab._builtin.prompt import instruction_files
    from crab._config.environ import crab_home

    labels = [label for label, _ in instruction_files(Path.cwd(), crab_home())]
    return (
        ", ".join(labels)
        if labels
        else "no AGENTS.md or CLAUDE.md here, above (to the repository root) or in your crab folder"
    )


def run_doctor(plugins: str | None, provider_name: str | None = None, model_name: str | None = None) -> int:
    """Print one line per check; returns 1 when anything failed (exit 2 under strict mode when a plugin did).

    ``provider_name`` and ``model_name`` are ``--provider`` and ``-m``: the provider check is then
    of what ``crab run`` with the same flags would use.
    """
    from crab._assembly.choosing import (
        build_host,
        choose_provider,
        choose_store,
        default_renderer,
        no_provider,
        remember_failures,
    )
    from crab._config.layers import load_config
    from crab._config.paths import user_config_path
    from crab._contracts.config import Config

    failures = 0
    try:
        config = load_config()
        where = (
            ", ".join(str(p) for p in (config.user_path, config.project_path) if p and p.exists()) or "defaults only"
        )
        _ok(f"config: {where}")
    except CrabError as exc:
        _bad(f"config: {exc}")
        failures += 1
        config = Config(data={}, user_path=user_config_path(), project_path=None)
    host = build_host(config, plugins, validate=False, strict=False)
    failures += _check_tables(host, config)
    host.collect_all()
    shown = set()
    for failure in host.failures:
        _bad(failure.line)
        shown.add(failure.line)
        failures += 1
    providers = host.registry("providers")
    ready = False
    if not providers:
        _bad(f"providers: {no_provider(host, model_name or config.get('crab.model'))}")
        failures += 1
    else:
        try:
            provider, model = choose_provider(host, config, provider_name, model_name)
            _ok(f"provider: {provider.name}/{model} is ready")
            ready = True
        except CrabError as exc:
            _bad(f"provider: {exc}")
            failures += 1
    started = None
    if ready:
        started = _start_once(plugins, provider_name, model_name)
        if started is not None:
            host = started  # its statuses include what crab_startup and crab_shutdown did
            for failure in host.failures:
                if failure.line not in shown:
                    _bad(failure.line)
                    shown.add(failure.line)
                    failures += 1
    loaded = [r.name for r in host.records.values() if r.status == "loaded"]
    _ok(f"plugins loaded: {', '.join(loaded) or 'none'}")
    for line in _plugin_statuses(host):
        typer.echo(line)
    failures += _plugin_checks(host, config)
    try:
        store = choose_store(host, config)

        async def probe() -> None:
            await store.open()
            await store.close()

        asyncio.run(probe())
        persistence = (
            " (sessions are lost when crab exits: pip install crab-tape-jsonl)" if store.name == "memory" else ""
        )
        _ok(f"store: {store.name}{persistence}")
    except (CrabError, OSError) as exc:
        _bad(f"store: {exc}")
        failures += 1
    renderer = config.get("crab.renderer")
    renderers = host.registry("renderers")
    if renderer and renderer not in renderers:
        _bad(f"renderer: {renderer!r} is not loaded (available: {', '.join(sorted(renderers))}); fix [crab] renderer")
        failures += 1
    else:
        used = renderer or default_renderer(host, renderers)
        in_chat = renderer or default_renderer(host, renderers, chat=True)
        _ok(f"renderer: {used}" + (f" (crab chat: {in_chat})" if in_chat != used else ""))
    failures += _check_serve(host, config)
    remember_failures(host, config, complete=started is not None)  # what `crab plugins list` shows next
    mode = config.get("crab.permissions", "ask")
    _ok(f"permissions: {mode}")
    _ok(f"instructions: {_instructions()}")
    _strict_exit(host)
    return 1 if failures else 0


def _start_once(plugins: str | None, provider_name: str | None, model_name: str | None) -> PluginHost | None:
    """Start and close the agent ``crab run`` would (every ``crab_startup``/``crab_shutdown``),
    so a plugin that fails to start fails here too; the host afterwards, or None when setup failed
    (the checks above say why)."""
    from crab._assembly.choosing import start_agent
    from crab._assembly.root import Layers, assemble

    try:
        built = assemble(layers=Layers(), plugins=plugins, provider=provider_name, model=model_name, strict=False)
    except CrabError:
        return None
    agent = built.agent

    async def cycle() -> None:
        try:
            await start_agent(agent)
        finally:
            await agent.close()

    try:
        asyncio.run(cycle())
    except CrabError as exc:
        _bad(f"startup: {exc}")
    return built.host


_SHOW = {"ok": _ok, "note": _note, "fail": _bad}


def _plugin_checks(host: PluginHost, config: Config) -> int:
    """What each plugin's ``crab_doctor`` says (a sandbox that works here…); returns failures.

    A plugin's text is shown on one line, secrets masked and control characters visible (``^[``):
    it may quote a key it checked or an error from elsewhere, and must not drive the terminal."""
    from crab._builtin.render_plain import visible
    from crab._secrets.keys import known_secrets
    from crab._secrets.redaction import Redactor

    redactor = Redactor(known_secrets(config))
    failures = 0
    before = len(host.failures)
    for plugin, lines in host.dispatch.collect("crab_doctor", config=config):
        for item in lines or ():
            if isinstance(item, tuple) and len(item) == 2 and item[0] in _SHOW and isinstance(item[1], str):
                _SHOW[item[0]](visible(" ".join(redactor.text(item[1]).split())))
                failures += item[0] == "fail"
            else:
                _bad(f'plugin {plugin}: crab_doctor gave {item!r}, expected ("ok"|"note"|"fail", text)')
                failures += 1
    for failure in host.failures[before:]:  # an implementation that raised
        _bad(failure.line)
        failures += 1
    return failures


def _plugin_statuses(host: PluginHost) -> list[str]:
    """The statuses of ``crab plugins list`` for the plugins chosen to load, as this check found
    them (after every hook ran): one status, computed by the host, shown one way."""
    from crab._cli.plugins_cmd import status_lines

    records = [r for r in host.records.values() if r.status not in ("builtin", "disabled")]
    return status_lines(records, indent="      ")


def _strict_exit(host: PluginHost) -> None:
    """Doctor shows every failure; under ``CRAB_STRICT_PLUGINS=1`` any failure still ends it with
    exit 2 and the first failure's line, as it ends every command."""
    from crab._config import environ
    from crab._contracts.errors import PluginError

    if environ.strict_plugins() and host.failures:
        raise PluginError(host.failures[0].line)
