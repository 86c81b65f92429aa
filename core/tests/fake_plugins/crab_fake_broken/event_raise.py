"""A ``crab_event`` observer that raises; the plugin's tool must keep working."""

import crab


@crab.tool
def wordcount(text: str) -> str:
    """Count the words of a text."""
    return str(len(text.split()))


@crab.hookimpl
def crab_tools(config):
    return [wordcount]


@crab.hookimpl
def crab_event(event, session_id):
    raise RuntimeError("observer bug")
