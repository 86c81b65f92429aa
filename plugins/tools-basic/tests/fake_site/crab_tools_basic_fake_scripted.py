"""A provider for the end-to-end tests: crab.testing's scripted provider replaying ``-m scripted/FILE``."""

import json

import crab
from crab.testing import ScriptedProvider


class FileScripted:
    name = "scripted"

    def __init__(self, config):
        self.engine = None

    def models(self):
        return [crab.ModelInfo(id="scripted", provider="scripted")]

    def check(self, model):
        return None

    def stream(self, request):
        if self.engine is None:
            with open(request.model) as handle:
                self.engine = ScriptedProvider(json.load(handle)["replies"], loop=True)
        return self.engine.stream(request)


@crab.hookimpl
def crab_providers(config):
    return [FileScripted(config)]
