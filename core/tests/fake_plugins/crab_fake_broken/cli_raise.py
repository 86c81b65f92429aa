"""``crab_cli`` raises: the CLI still works, and says so once."""

import crab


@crab.hookimpl
def crab_cli(app, config):
    raise RuntimeError("no sub-commands today")
