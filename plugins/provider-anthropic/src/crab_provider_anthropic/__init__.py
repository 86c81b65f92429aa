"""crab-provider-anthropic: the Anthropic Messages API as a crab provider.

Hook implementations only; the parser, request building and settings live in sibling modules;
the HTTP streaming itself is crab-provider-kit's `stream_call`.
Imports nothing heavy: httpx is loaded when a request is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crab import hookimpl

if TYPE_CHECKING:
    from crab import Config, ConfigTable, Provider

CRAB_API = ">=0.1,<0.2"


@hookimpl
def crab_config_table() -> ConfigTable:
    from crab_provider_anthropic.settings import TABLE

    return TABLE


@hookimpl
def crab_providers(config: Config) -> list[Provider]:
    from crab_provider_kit import request_timeout_from

    from crab_provider_anthropic.provider import AnthropicProvider
    from crab_provider_anthropic.settings import PLUGIN

    return [AnthropicProvider(config.plugin_settings(PLUGIN), request_timeout=request_timeout_from(config))]
