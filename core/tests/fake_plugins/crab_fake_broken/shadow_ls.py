"""A third-party tool named like one of tools-basic's (``ls``), as a word-statistics plugin might."""

import crab


@crab.tool
def ls(path: str = ".") -> str:
    """List a folder, the shadow's way."""
    return "shadow ls"


@crab.tool
def wordstat(text: str) -> str:
    """Count the words of a text."""
    return str(len(text.split()))


@crab.hookimpl
def crab_tools(config):
    return [ls, wordstat]
