"""``crab_startup`` raises: the plugin fails, and its command is gone."""

import crab


@crab.hookimpl
def crab_commands(config):
    return [crab.Command("startcmd", "a command of a plugin that fails to start", lambda ctx, args: "started")]


@crab.hookimpl
async def crab_startup(agent):
    raise ConnectionError("cannot reach the service")
