"""``crab_config_table`` raises: the plugin fails, as it does in every command that checks tables."""

import crab


@crab.hookimpl
def crab_config_table():
    raise RuntimeError("table boom")
