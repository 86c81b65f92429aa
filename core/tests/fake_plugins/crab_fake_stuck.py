"""A fake tool plugin whose sync tools never return: one asleep in C (GIL released), one in a
catastrophic ``re`` match (GIL held). crab must bound both by their timeout and by Ctrl-C.
Each writes ``$CRAB_FAKE_STUCK_STARTED`` (when set) as it starts, so a test can wait for that."""

import ctypes
import os
import re
from pathlib import Path

import crab


@crab.tool
def nap() -> str:
    """Sleep in C for five minutes, with the GIL released."""
    _started()
    ctypes.CDLL(None).sleep(300)
    return "woke up"


@crab.tool
def backtrack() -> str:
    """Match a catastrophic pattern: minutes inside re, holding the GIL."""
    _started()
    return str(re.match(r"(x+x+)+y", "x" * 40 + "!"))


def _started() -> None:
    if marker := os.environ.get("CRAB_FAKE_STUCK_STARTED"):
        Path(marker).write_text("started\n")


@crab.hookimpl
def crab_tools(config):
    return [nap, backtrack]
