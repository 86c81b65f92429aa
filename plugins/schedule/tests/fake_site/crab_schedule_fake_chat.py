"""A chat channel for the end-to-end tests, standing in for Telegram: ``fakechat`` writes ``ready``
when it runs and appends what it is asked to deliver to ``<address>.delivered`` in the folder
``SCHEDULE_FAKE_CHAT_DIR`` names."""

import asyncio
import os
from pathlib import Path

import crab


class FakeChat:
    name = "fakechat"
    local = False

    def __init__(self):
        self.stopping = False

    def _folder(self):
        return Path(os.environ["SCHEDULE_FAKE_CHAT_DIR"])

    async def run(self, agent):
        (self._folder() / f"ready.{os.getpid()}").write_text("")
        while not self.stopping:
            await asyncio.sleep(0.02)

    async def stop(self):
        self.stopping = True

    async def deliver(self, address, text):
        with open(self._folder() / f"{address}.delivered", "a") as handle:
            handle.write(text + "\n")


@crab.hookimpl
def crab_channels(config):
    return [FakeChat()]
