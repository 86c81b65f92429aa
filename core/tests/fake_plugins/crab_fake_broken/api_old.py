"""Written for a plugin API older than this crab's."""

import crab

CRAB_API = "<0.1"


@crab.hookimpl
def crab_tools(config):
    return []
