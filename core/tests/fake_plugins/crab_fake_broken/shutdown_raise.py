"""``crab_shutdown`` raises: reported, the run still ends normally."""

import crab


@crab.hookimpl
def crab_shutdown(agent):
    raise OSError("could not flush")
