"""Declares its plugin API as a number instead of a range string."""

import crab

CRAB_API = 2


@crab.hookimpl
def crab_tools(config):
    return []
