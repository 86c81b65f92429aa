"""A fake provider plugin: crab.testing's scripted provider replaying the file named by crab.script."""

import json

import crab
from crab.testing.scripted import ScriptedProvider


class FileScripted:
    name = "scripted"

    def __init__(self, config):
        self.config = config
        self.engine = None

    def models(self):
        return [crab.ModelInfo(id="scripted", provider="scripted", input_price=1.0, output_price=2.0)]

    def check(self, model):
        if not self.config.get("crab.script"):
            raise crab.ConfigError("scripted: pass --script FILE")

    def stream(self, request):
        if self.engine is None:
            with open(self.config.get("crab.script")) as handle:
                self.engine = ScriptedProvider(json.load(handle)["replies"])
        return self.engine.stream(request)


@crab.hookimpl
def crab_providers(config):
    return [FileScripted(config)]
