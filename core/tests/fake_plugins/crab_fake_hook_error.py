"""A fake plugin whose registration hook raises."""

import crab


@crab.hookimpl
def crab_tools(config):
    raise ValueError("no tools today")
