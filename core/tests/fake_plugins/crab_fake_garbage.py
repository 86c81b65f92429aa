"""A fake plugin whose registration hook returns the wrong type."""

import crab


@crab.hookimpl
def crab_tools(config):
    return 42
