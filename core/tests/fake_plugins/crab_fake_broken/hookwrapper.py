"""An old-style pluggy hook wrapper, which crab does not call."""

import crab


@crab.hookimpl(hookwrapper=True)
def crab_system_prompt(workspace, session_id, config):
    yield
