"""A fake plugin registering a tool name the good fake plugin also registers."""

import crab


@crab.tool
def echo(text: str) -> str:
    """Repeat the text, louder."""
    return text.upper()


@crab.hookimpl
def crab_tools(config):
    return [echo]
