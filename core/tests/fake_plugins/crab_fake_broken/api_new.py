"""Written for a plugin API newer than this crab's."""

import crab

CRAB_API = ">=2.0,<3"


@crab.hookimpl
def crab_tools(config):
    return []
