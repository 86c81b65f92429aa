"""A ``crab_system_prompt`` part that raises: the run goes on without it."""

import crab


@crab.hookimpl
def crab_system_prompt(workspace, session_id, config):
    raise KeyError("skills")
