"""A fake provider plugin: crab.testing's scripted provider replaying the file its model id names
(or, for the priced model ``scripted``, the file ``[plugins.scripted] script`` names).

With ``CRAB_FAKE_REQUEST_LOG`` set, each request's images (role, media type, size, whether the
bytes came) are appended to that file as one JSON line, for tests of what reaches a provider."""

import json
import os
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
        log = os.environ.get("CRAB_FAKE_REQUEST_LOG")
        if log:
            images = [
                [m.role, i.media_type, i.size, len(i.data) == i.size]
                for m in request.messages
                for i in getattr(m, "images", ())
            ]
            with open(log, "a") as handle:
                handle.write(json.dumps(images) + "\n")
        if self.engine is None:
            with open(self.script(request.model)) as handle:
                self.engine = ScriptedProvider(json.load(handle)["replies"])
        return self.engine.stream(request)


@crab.hookimpl
def crab_providers(config):
    return [FileScripted(config)]
