"""``crab serve [CHANNEL…]``: run channel plugins (a bot, a scheduler) with one agent until stopped
(``crab._assembly.channel_host``); remote unless every channel is local (docs/architecture.md#crab-serve)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from crab._cli.options import RunOptions
from crab._contracts.errors import ConfigError

if TYPE_CHECKING:
    from crab._cli.engines import Engine
    from crab._contracts.channels import Channel
    from crab._contracts.config import Config
    from crab._host.plugin_host import PluginHost


MEMORY_ONLY = (
    "sessions are kept in memory only: every conversation is lost when crab serve stops or restarts "
    "(pip install crab-store-sqlite or crab-tape-jsonl, or set [crab] store)"
)


def chosen_channels(names: Sequence[str], configured: Sequence[str], loaded: dict[str, Any]) -> dict[str, Channel]:
    """The channels to run: ``names`` (from the command line), else ``[serve] channels``."""
    from crab._values.router import did_you_mean

    wanted = list(dict.fromkeys(names or configured))
    if not wanted:
        raise ConfigError(
            "no channel to serve: name one (`crab serve telegram`) or enable some with "
            f'[serve] channels = ["…"] in your user config (loaded: {", ".join(sorted(loaded)) or "none"})'
        )
    for name in wanted:
        if name not in loaded:
            raise ConfigError(
                f"no channel named {name!r}.{did_you_mean(name, loaded)} Loaded: {', '.join(sorted(loaded)) or 'none'}."
            )
    return {name: loaded[name] for name in wanted}


def served_engine(host: PluginHost, config: Config) -> Engine | None:
    """The turn engine ``[serve] engine`` names (None: turns run in this process); an unknown
    name is a ``ConfigError`` naming those available, before any channel starts."""
    name = config.get("serve.engine")
    if not name:
        return None
    from crab._cli.engines import turn_engine

    try:
        return turn_engine(host, config, str(name), ConfigError)
    except ConfigError as exc:
        raise ConfigError(f"[serve] engine: {exc}") from None


def serve_channels(names: Sequence[str], options: RunOptions) -> int:
    from crab._assembly.channel_host import ChannelHost
    from crab._assembly.choosing import choose_renderer, emit_config_notices, start_agent
    from crab._cli.setup import prepare
    from crab._contracts.renderers import RenderTarget

    prepared = prepare(options, ask=None, local=False)
    config = prepared.config
    try:
        channels = chosen_channels(names, config.get("serve.channels") or [], prepared.host.registry("channels"))
    except ConfigError:
        # No agent will start to show them, and one (an ignored [serve] channels) may be why.
        emit_config_notices(config, lambda line, _level: sys.stderr.write(f"warning: {line}\n"))
        raise
    for channel in channels.values():
        check = getattr(channel, "check", None)
        if callable(check):
            check()  # a ConfigError here: exit 2 with its line, before anything started
    engine = served_engine(prepared.host, config)
    agent = prepared.agent
    agent.local = all(channel.local for channel in channels.values())
    renderer = choose_renderer(prepared.host, config, "plain", RenderTarget(sys.stderr, sys.stderr))
    agent.subscribe(renderer.handle)
    if agent.store.name == "memory":
        # A bot's users cannot see that their conversations live only in this process.
        agent.notice(MEMORY_ONLY, "warning")
    grace = float(config.get("serve.grace_seconds", 30.0))
    host = ChannelHost(
        agent,
        channels,
        grace=grace,
        restart_delay=float(config.get("serve.restart_delay", 1.0)),
        restart_max_delay=float(config.get("serve.restart_max_delay", 60.0)),
        engine=engine,
    )

    async def main() -> None:
        await start_agent(agent)
        try:
            await host.run()
        finally:
            await agent.close()

    from crab._cli.signals import GATE, Interrupted

    runner = asyncio.Runner()
    try:
        GATE.run(runner, main(), drain=host.request_stop, drain_seconds=grace)
    except Interrupted as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    finally:
        runner.close()
    return 2 if host.broken and len(host.broken) == len(channels) else 0
