"""``crab serve CHANNEL``: run a channel plugin (a bot, a scheduler) with an agent until stopped."""

from __future__ import annotations

import asyncio
import sys

from crab.cli.options import RunOptions
from crab.errors import ConfigError


def serve_channel(name: str, options: RunOptions) -> int:
    from crab.cli.runtime import choose_renderer, start_agent
    from crab.cli.setup import prepare
    from crab.handles import AgentHandle
    from crab.loop.router import did_you_mean
    from crab.render import RenderTarget

    prepared = prepare(options, ask=None, local=False)
    channels = prepared.host.registry("channels")
    if name not in channels:
        raise ConfigError(
            f"no channel named {name!r}.{did_you_mean(name, channels)} Loaded: {', '.join(sorted(channels)) or 'none'}."
        )
    channel = channels[name]
    agent = prepared.agent
    agent.local = channel.local
    renderer = choose_renderer(prepared.host, prepared.config, "plain", RenderTarget(sys.stderr, sys.stderr))
    agent.subscribe(renderer.handle)

    async def main() -> None:
        await start_agent(agent)
        try:
            await channel.run(AgentHandle(agent))
        finally:
            await agent.close()

    from crab.cli.signals import GATE, Interrupted

    runner = asyncio.Runner()
    try:
        GATE.run(runner, main())
    except Interrupted as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    finally:
        runner.close()
    return 0
