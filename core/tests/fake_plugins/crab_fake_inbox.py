"""Fake channels for ``crab serve``: ``inbox`` answers files dropped in a folder, one keyed session
per address, and delivers; ``crashy`` fails every time it starts.

``inbox``: ``<address>.<n>.in`` holds one message; the answer goes to ``<address>.<n>.out`` as
JSON (session id, stop, text, and the roles of the session as the store gives it back). A
message ``deliver CHANNEL ADDRESS TEXT`` calls ``AgentHandle.deliver`` instead and writes its
result or error. ``deliver`` appends to ``<address>.delivered``. A message ``bg:TEXT`` runs
beside the next ones (``<address>.<n>.queued`` once its input is queued), ``steer:TEXT`` likewise
as steering (``handle_input(..., steer=True)``).
"""

import asyncio
import json
import os
from pathlib import Path

import crab


def _folder() -> Path:
    return Path(os.environ["CRAB_FAKE_INBOX_DIR"])


class Inbox:
    name = "inbox"
    local = False

    def __init__(self):
        self.stopping = False
        self.tasks = set()

    async def run(self, agent):
        folder = _folder()
        (folder / "ready").write_text("")
        while not self.stopping:
            for path in sorted(folder.glob("*.in")):
                address = path.name.split(".", 1)[0]
                text = path.read_text()
                path.rename(path.with_suffix(".taken"))
                out = path.with_suffix(".out")
                if text.startswith("deliver "):
                    _, channel, target, message = text.split(" ", 3)
                    try:
                        await agent.deliver(channel, target, message)
                        out.write_text(json.dumps({"delivered": True}))
                    except crab.ChannelError as exc:
                        out.write_text(json.dumps({"error": str(exc)}))
                    continue
                session = await agent.session_for("inbox", address)
                path.with_suffix(".started").write_text(session.id)
                if text.startswith(("bg:", "steer:")):  # beside what runs: a turn, or steering it
                    kind, text = text.split(":", 1)
                    task = asyncio.create_task(self._answer(agent, session, text, out, kind == "steer"))
                    self.tasks.add(task)
                    task.add_done_callback(self.tasks.discard)
                    await asyncio.sleep(0)  # its first step queues the input
                    path.with_suffix(".queued").write_text("")
                    continue
                await self._answer(agent, session, text, out, False)
            await asyncio.sleep(0.02)
        if self.tasks:
            await asyncio.gather(*self.tasks)

    async def _answer(self, agent, session, text, out, steer):
        outcome = await agent.handle_input(session, text, steer=steer)
        stored = await agent.resume(session.id)
        roles = [m.role for m in stored.messages]
        out.write_text(json.dumps({"session": session.id, "stop": outcome.stop, "text": outcome.text, "roles": roles}))

    async def stop(self):
        self.stopping = True

    async def deliver(self, address, text):
        with open(_folder() / f"{address}.delivered", "a") as handle:
            handle.write(text + "\n")


class Crashy:
    name = "crashy"
    local = False

    async def run(self, agent):
        with open(_folder() / "crashy.starts", "a") as handle:
            handle.write("x")
        raise RuntimeError("crashy broke on start")


class Unready:
    """A channel whose setup is missing: ``check`` says what to set."""

    name = "unready"
    local = False

    def check(self):
        raise crab.ConfigError("unready: no token found: set UNREADY_TOKEN")

    async def run(self, agent):
        raise AssertionError("check() should have stopped crab serve first")


@crab.hookimpl
def crab_channels(config):
    return [Inbox(), Crashy(), Unready()]


@crab.hookimpl
async def crab_startup(agent):
    # With CRAB_FAKE_SLOW_START set: an agent that takes minutes to start (a slow MCP server).
    folder = os.environ.get("CRAB_FAKE_SLOW_START")
    if folder:
        Path(folder, "starting").write_text("")
        await asyncio.sleep(300)
