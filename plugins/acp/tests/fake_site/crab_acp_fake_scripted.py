"""A provider for crab-acp's end-to-end tests: crab.testing's scripted provider replaying ``-m scripted/FILE``.

A script with ``"stream_calls": false`` streams no ``ToolCallEvent``: its calls come only with the
final message, as from a provider that does not stream them."""

import json
import os
from pathlib import Path

import crab
from crab.testing import ScriptedProvider


class Unstreamed(ScriptedProvider):
    async def stream(self, request):
        async for event in super().stream(request):
            if not isinstance(event, crab.events.ToolCallEvent):
                yield event


class FileScripted:
    name = "scripted"

    def __init__(self, config):
        self.engines = {}

    def models(self):
        # Every script of the test is a model it may switch to (/model takes only listed models).
        scripts = sorted(Path(os.environ.get("ACP_TEST_SCRIPTS", ".")).glob("script*.json"))
        return [crab.ModelInfo(id=str(path), provider="scripted") for path in scripts] or [
            crab.ModelInfo(id="scripted", provider="scripted")
        ]

    def check(self, model):
        return None

    def stream(self, request):
        if request.model not in self.engines:  # one engine per script: /model switches between them
            with open(request.model) as handle:
                script = json.load(handle)
            kind = ScriptedProvider if script.get("stream_calls", True) else Unstreamed
            self.engines[request.model] = kind(script["replies"], loop=True)
        return self.engines[request.model].stream(request)


@crab.hookimpl
def crab_providers(config):
    return [FileScripted(config)]
