"""crab-telegram: the ``telegram`` channel (``crab serve telegram``) and ``crab telegram run|pair``."""

from __future__ import annotations

from typing import Any

import crab

CRAB_API = ">=1.0,<2"


@crab.hookimpl
def crab_config_table() -> crab.ConfigTable:
    from crab_telegram import settings

    table: crab.ConfigTable = settings.TABLE
    return table


@crab.hookimpl
def crab_channels(config: crab.Config) -> list[Any]:
    from crab_telegram.channel import TelegramChannel

    return [TelegramChannel(config)]


@crab.hookimpl
def crab_cli(app: Any, config: crab.Config) -> None:
    from crab_telegram.cli import add_commands

    add_commands(app, config)
