"""A new-style pluggy hook wrapper, which crab does not call."""

import crab


@crab.hookimpl(wrapper=True)
def crab_event(event, session_id):
    return (yield)
