"""A well-behaved fake plugin: one tool and one command."""

import crab

CRAB_API = ">=0.1,<0.2"


@crab.tool
def echo(text: str) -> str:
    """Repeat the text."""
    return text


@crab.hookimpl
def crab_tools(config):
    return [echo]


@crab.hookimpl
def crab_commands(config):
    return [crab.Command("hello", "say hello", lambda ctx, args: f"hello {args}".strip())]
