"""A test plugin for crab-render-rich's end-to-end tests (installed into a site folder by conftest).

Provider ``fake`` (model ``script``): crab.testing's scripted provider replaying the JSON file
``$RENDER_RICH_SCRIPT`` names;
every request's messages are appended to ``$RENDER_RICH_REQUESTS`` (one JSON line per request),
so a test sees what the model was sent. Tools: ``slow`` (sleeps, read), ``touch`` (write: the
permission gate asks).
"""

import asyncio
import json
import os
from pathlib import Path

import crab
from crab.testing import ScriptedProvider


class FileScripted:
    name = "fake"

    def __init__(self):
        self.engine = None

    def models(self):
        return [crab.ModelInfo(id="script", provider="fake", context_window=200_000, input_price=1.0, output_price=2.0)]

    def check(self, model):
        if not Path(os.environ.get("RENDER_RICH_SCRIPT", "")).is_file():
            raise crab.ConfigError("fake: set RENDER_RICH_SCRIPT to a script file")

    def stream(self, request):
        if self.engine is None:
            script = Path(os.environ["RENDER_RICH_SCRIPT"])
            self.engine = ScriptedProvider(json.loads(script.read_text())["replies"])
        log = os.environ.get("RENDER_RICH_REQUESTS")
        if log:
            texts = [crab.message_to_dict(m) for m in request.messages]
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(texts) + "\n")
        return self.engine.stream(request)


@crab.tool
async def slow(seconds: float) -> str:
    """Wait, then say so."""
    await asyncio.sleep(seconds)
    return f"waited {seconds} s\nsecond line\nthird line\nfourth line"


@crab.tool(permission="write")
def touch(path: str) -> str:
    """Create an empty file."""
    Path(path).touch()
    return f"created {path}"


@crab.hookimpl
def crab_providers(config):
    return [FileScripted()]


@crab.hookimpl
def crab_tools(config):
    return [slow, touch]
