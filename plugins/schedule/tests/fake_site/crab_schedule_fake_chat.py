"""A chat channel for the end-to-end tests, standing in for Telegram, in the folder
``SCHEDULE_FAKE_CHAT_DIR`` names: ``fakechat`` writes ``ready.<pid>`` when it runs; a message
dropped in ``<address>.in`` is a turn in that chat's keyed session (answer and session id in
``<address>.out``); a permission question is answered "once" and noted in ``<address>.asked``;
what it is asked to deliver is appended to ``<address>.delivered``."""

import asyncio
import json
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
        folder = self._folder()
        while not self.stopping:
            for path in sorted(folder.glob("*.in")):
                address = path.name.split(".", 1)[0]
                text = path.read_text()
                path.rename(path.with_suffix(".taken"))
                session = await agent.session_for("fakechat", address)
                outcome = await agent.handle_input(session, text)
                path.with_suffix(".out").write_text(json.dumps({"session": session.id, "text": outcome.text}))
            await asyncio.sleep(0.02)

    async def ask(self, address, request):
        with open(self._folder() / f"{address}.asked", "a") as handle:
            handle.write(f"{request.tool} {request.permission}\n")
        return "once"

    async def stop(self):
        self.stopping = True

    async def deliver(self, address, text):
        with open(self._folder() / f"{address}.delivered", "a") as handle:
            handle.write(text + "\n")


@crab.hookimpl
def crab_channels(config):
    return [FakeChat()]
