"""crab-provider-openai: OpenAI-compatible chat completions as a crab provider.

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
    from crab_provider_openai.settings import TABLE

    return TABLE


@hookimpl
def crab_providers(config: Config) -> list[Provider]:
    """``openai`` from the plugin's table, plus one provider per ``[plugins.provider-openai.endpoints.<name>]``."""
    from crab_provider_openai.provider import providers_from_config

    return providers_from_config(config)
