"""A test plugin for crab-ask's end-to-end tests (put on PYTHONPATH as if pip-installed, by conftest).

Provider ``fake`` (model ``script``): crab.testing's scripted provider replaying the JSON file
``$ASK_SCRIPT``; every request's messages are appended to ``$ASK_REQUESTS`` (one JSON line per
request), so a test sees what the model was sent back.
"""

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
        return [crab.ModelInfo(id="script", provider="fake", context_window=200_000)]

    def check(self, model):
        if not Path(os.environ.get("ASK_SCRIPT", "")).is_file():
            raise crab.ConfigError("fake: set ASK_SCRIPT to a script file")

    def stream(self, request):
        if self.engine is None:
            self.engine = ScriptedProvider(json.loads(Path(os.environ["ASK_SCRIPT"]).read_text())["replies"])
        with open(os.environ["ASK_REQUESTS"], "a", encoding="utf-8") as handle:
            handle.write(json.dumps([crab.message_to_dict(m) for m in request.messages]) + "\n")
        return self.engine.stream(request)


@crab.hookimpl
def crab_providers(config):
    return [FileScripted()]
