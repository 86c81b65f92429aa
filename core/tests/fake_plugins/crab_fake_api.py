"""A fake plugin written for a future plugin API."""

import crab

CRAB_API = ">=2.0,<3"


@crab.hookimpl
def crab_tools(config):
    return []
