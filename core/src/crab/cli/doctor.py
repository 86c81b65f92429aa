"""``crab doctor``: check config, plugins, providers, store and renderer; each problem with its fix."""

from __future__ import annotations

import asyncio

import typer

from crab import environ
from crab.errors import CrabError


def _ok(text: str) -> None:
    typer.echo(f"ok    {text}")


def _bad(text: str) -> None:
    typer.echo(f"FAIL  {text}")


def run_doctor(plugins: str | None) -> int:
    """Print one line per check; returns 1 when anything failed."""
    from crab.cli.runtime import build_host, choose_provider, choose_store, load_cli_config
    from crab.config import Config, user_config_path

    failures = 0
    try:
        config = load_cli_config()
        where = (
            ", ".join(str(p) for p in (config.user_path, config.project_path) if p and p.exists()) or "defaults only"
        )
        _ok(f"config: {where}")
    except CrabError as exc:
        _bad(f"config: {exc}")
        failures += 1
        config = Config(data={}, user_path=user_config_path(), project_path=None)
    host = build_host(config, plugins if plugins is not None else environ.plugin_list())
    host.collect_all()
    loaded = [r.name for r in host.records.values() if r.status == "loaded"]
    _ok(f"plugins loaded: {', '.join(loaded) or 'none'}")
    for record in host.problems():
        _bad(f"plugin {record.name}: {record.reason}")
        failures += 1
    providers = host.registry("providers")
    if not providers:
        _bad("providers: none loaded — pip install crab-provider-openai (or crab-provider-anthropic)")
        failures += 1
    else:
        try:
            provider, model = choose_provider(host, config)
            _ok(f"provider: {provider.name}/{model} is ready")
        except CrabError as exc:
            _bad(f"provider: {exc}")
            failures += 1
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
        _ok(f"renderer: {renderer or ('rich' if 'rich' in renderers else 'plain')}")
    mode = config.get("crab.permissions", "ask")
    _ok(f"permissions: {mode}")
    return 1 if failures else 0
