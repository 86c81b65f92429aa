"""crab-tools-web: registers web_fetch and web_search behind a network seatbelt (hook implementations only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import crab

if TYPE_CHECKING:
    from crab import Config, ConfigTable, Tool

CRAB_API = ">=0.1,<0.2"


@crab.hookimpl
def crab_config_table() -> ConfigTable:
    """``[plugins.tools-web]``: see ``crab_tools_web.settings.TABLE``."""
    from crab_tools_web.settings import TABLE

    return TABLE


@crab.hookimpl
def crab_tools(config: Config) -> list[Tool]:
    """web_fetch and web_search, their limits taken from this config."""
    from crab_tools_web.tools import build_tools

    return build_tools(config.plugin_settings("tools-web"))
