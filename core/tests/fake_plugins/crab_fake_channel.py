"""A fake channel plugin: answers one message from a file and writes the reply next to it."""

import os
from pathlib import Path

import crab


class OneShot:
    name = "one-shot"
    local = False

    async def run(self, agent):
        inbox = Path(os.environ["CRAB_FAKE_INBOX"])
        session = await agent.new_session()
        outcome = await agent.handle_input(session, inbox.read_text())
        shell = await agent.handle_input(session, "!echo not allowed")
        inbox.with_suffix(".out").write_text(f"{outcome.stop}|{outcome.text}|{shell.error}")


@crab.hookimpl
def crab_channels(config):
    return [OneShot()]
