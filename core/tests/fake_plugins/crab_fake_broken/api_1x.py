"""Written for the plugin API's own numbering (1.0 to 1.7) that crab-core 0.1 replaced with its 0.x minor."""

import crab

CRAB_API = ">=1.5,<2"  # api-codemod: keep (what a plugin of that time declared)


@crab.hookimpl
def crab_tools(config):
    return []
