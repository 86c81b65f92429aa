"""crab-provider-mock: the ``mock`` provider, replaying a script file (see crab.testing.scripted)."""

from __future__ import annotations

import crab

CRAB_API = ">=0.1,<0.2"


@crab.hookimpl
def crab_config_table() -> crab.ConfigTable:
    return crab.ConfigTable(
        "provider-mock",
        (
            crab.Setting(
                "script", "str", doc="script file to replay for the model `scripted` (or name the file: -m mock/FILE)"
            ),
            crab.Setting(
                "pick",
                "str",
                default="order",
                choices=("order", "conversation"),
                doc="which reply answers a call: the next in this process (order) or the one after the replies"
                " the request's conversation holds (conversation: model calls of one session in several processes)",
            ),
        ),
        doc="the scripted mock provider",
    )


@crab.hookimpl
def crab_providers(config: crab.Config) -> list[crab.Provider]:
    from crab_provider_mock.provider import ScriptFileProvider

    return [ScriptFileProvider(config)]
