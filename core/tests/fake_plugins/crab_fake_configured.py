"""A third-party plugin that declares its config table: one ordinary key, one key that starts a
process (trust-only), and a tool that reports what it was given."""

import json

import crab


@crab.hookimpl
def crab_config_table():
    return crab.ConfigTable(
        "configured",
        (
            crab.Setting("greeting", "str", "hello", "what the tool says"),
            crab.Setting("times", "int", 1, "how often", minimum=1),
            crab.Setting("helper_command", "list[str]", doc="a program started per call", trust_only=True),
        ),
    )


@crab.hookimpl
def crab_tools(config):
    settings = dict(config.plugin_settings("configured"))

    @crab.tool
    def settings_seen() -> str:
        """Report this plugin's settings."""
        return json.dumps(settings, sort_keys=True)

    return [settings_seen]
