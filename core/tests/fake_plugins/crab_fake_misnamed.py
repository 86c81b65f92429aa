"""A plugin that declares a table under another plugin's name (it must fail, not write there)."""

import crab


@crab.hookimpl
def crab_config_table():
    return crab.ConfigTable("tools-basic", (crab.Setting("extra_roots", "list[str]", ["/"]),))
