"""A fake provider plugin: crab.testing's scripted provider replaying the file its model id names
(or, for the priced model ``scripted``, the file ``[plugins.scripted] script`` names)."""

import json
from pathlib import Path

import crab
from crab.testing import ScriptedProvider


class FileScripted:
    name = "scripted"

    def __init__(self, config):
        self.config = config
        self.engine = None

    def models(self):
        return [crab.ModelInfo(id="scripted", provider="scripted", input_price=1.0, output_price=2.0)]

    def script(self, model):
        if model == "scripted":
            return self.config.plugin_settings("scripted").get("script")
        return model

    def check(self, model):
        path = self.script(model)
        if not path:
            raise crab.ConfigError("scripted: pass -m scripted/FILE")
        if not Path(path).is_file():
            raise crab.ConfigError(f"scripted: no such script {path}")

    def stream(self, request):
        if self.engine is None:
            with open(self.script(request.model)) as handle:
                self.engine = ScriptedProvider(json.load(handle)["replies"])
        return self.engine.stream(request)


@crab.hookimpl
def crab_providers(config):
    return [FileScripted(config)]
