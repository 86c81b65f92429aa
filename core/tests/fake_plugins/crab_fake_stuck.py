"""A fake tool plugin whose tools do not end when told: sync tools that never return, one asleep
in C (GIL released), one in a catastrophic ``re`` match (GIL held); async tools whose clean-up
after a cancel is slow, one awaiting five more seconds (the GIL free), one matching that pattern
in the event loop's thread (the GIL held). crab must bound them all, by their timeout and by Ctrl-C.
Each writes ``$CRAB_FAKE_STUCK_STARTED`` (when set) as it starts, so a test can wait for that."""

import asyncio
import ctypes
import os
import re
import time
from pathlib import Path

import crab

SLOW_CLEANUP = 5.0


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
    return _catastrophe()


@crab.tool
async def stubborn() -> str:
    """Wait; cancelled, go on waiting (in Python, the GIL free) for five seconds, then give in."""
    _started()
    try:
        await asyncio.sleep(300)
    except asyncio.CancelledError:
        end = time.monotonic() + SLOW_CLEANUP
        while (left := end - time.monotonic()) > 0:
            try:
                await asyncio.sleep(left)
            except asyncio.CancelledError:  # cancelled again: still not done
                continue
        raise
    return "woke up"


@crab.tool
async def grudging() -> str:
    """Wait; cancelled, match the catastrophic pattern in the event loop's thread (the GIL held)."""
    _started()
    try:
        await asyncio.sleep(300)
    except asyncio.CancelledError:
        _catastrophe()
        raise
    return "woke up"


def _catastrophe() -> str:
    return str(re.match(r"(x+x+)+y", "x" * 40 + "!"))


def _started() -> None:
    if marker := os.environ.get("CRAB_FAKE_STUCK_STARTED"):
        Path(marker).write_text("started\n")


@crab.hookimpl
def crab_tools(config):
    return [nap, backtrack, stubborn, grudging]
