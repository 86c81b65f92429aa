"""Building an agent and its session from CLI options (shared by run, chat and serve)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crab._cli.options import RunOptions
from crab._config.layers import Config, parse_value
from crab._contracts.errors import CrabError, UsageError
from crab._contracts.interception import AskUser
from crab._host.plugin_host import PluginHost
from crab._loop.agent import Agent
from crab._loop.session import Session


@dataclass
class Prepared:
    config: Config
    host: PluginHost
    agent: Agent


def overrides_from(options: RunOptions) -> dict[str, Any]:
    """Config overrides (dotted keys) from run/chat flags."""
    overrides: dict[str, Any] = {}
    for item in options.settings:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set takes KEY=VALUE, got {item!r}")
        overrides[key.strip()] = parse_value(value.strip())
    if options.yolo and options.read_only:
        raise UsageError("--yolo and --read-only contradict each other; pick one")
    if options.yolo:
        overrides["crab.permissions"] = "yolo"
    if options.read_only:
        overrides["crab.permissions"] = "read-only"
    if options.store:
        overrides["crab.store"] = options.store
    return overrides


def prepare(options: RunOptions, *, ask: AskUser | None, local: bool = True) -> Prepared:
    """Config, plugins, provider, store and agent for a run; raises ``CrabError`` on bad setup."""
    from crab._assembly.runtime import build_host, choose_provider, choose_store, emit_config_notices, load_cli_config

    config = load_cli_config(overrides_from(options))
    plugins = options.plugins
    host = build_host(config, plugins)
    try:
        provider, model = choose_provider(host, config, options.provider, options.model)
        store = choose_store(host, config)
    except CrabError:
        # No agent will start to show them, and they may be why this failed.
        emit_config_notices(config, lambda line, _level: sys.stderr.write(f"warning: {line}\n"))
        raise
    agent = Agent(host, config, store=store, provider=provider, model=model, workspace=Path.cwd(), ask=ask, local=local)
    return Prepared(config, host, agent)


async def open_session(agent: Agent, options: RunOptions) -> Session:
    """The session a run continues (``--session``, ``-c``) or a new one."""
    if options.session:
        from crab._assembly.runtime import require_session

        await require_session(agent.store, options.session)
        return await agent.resume(options.session)
    if options.continue_latest:
        latest = await agent.latest_session()
        if latest is not None:
            return latest
        agent.notice(f"no earlier session in this folder in the {agent.store.name} store; starting a new one")
    return await agent.new_session()
