"""A fake tool plugin whose sync tools never return: one asleep in C (GIL released), one in a
catastrophic ``re`` match (GIL held). crab must bound both by their timeout and by Ctrl-C."""

import ctypes
import re

import crab


@crab.tool
def nap() -> str:
    """Sleep in C for five minutes, with the GIL released."""
    ctypes.CDLL(None).sleep(300)
    return "woke up"


@crab.tool
def backtrack() -> str:
    """Match a catastrophic pattern: minutes inside re, holding the GIL."""
    return str(re.match(r"(x+x+)+y", "x" * 40 + "!"))


@crab.hookimpl
def crab_tools(config):
    return [nap, backtrack]
