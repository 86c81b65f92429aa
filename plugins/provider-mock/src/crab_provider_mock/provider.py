"""The ``mock`` provider: the model id names the script file, replayed with the scripted engine.

``crab run -m mock/examples/tour.json "…"`` replays ``examples/tour.json`` (relative paths are
read from the current folder). The model ``scripted`` (the default when no model is given) reads
``[plugins.provider-mock] script`` instead. Core knows nothing of scripts: the model id is the
provider-agnostic way every provider is told what to run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from crab import Config, ConfigError, ModelInfo, ModelRequest, StreamEvent
from crab.testing import ScriptedProvider, load_script

DEFAULT_MODEL = "scripted"
NO_SCRIPT = (
    "the mock provider needs a script: pass -m mock/FILE (see examples/tour.json) or set [plugins.provider-mock] script"
)


def script_path(config: Config, model: str = DEFAULT_MODEL) -> Path | None:
    """The script a model id names: the id itself, or ``[plugins.provider-mock] script`` for ``scripted``."""
    value = model if model and model != DEFAULT_MODEL else config.plugin_settings("provider-mock").get("script")
    return Path(str(value)).expanduser().resolve() if value else None


class ScriptFileProvider:
    """Loads a script on first use, so listing providers never touches a file."""

    name = "mock"

    def __init__(self, config: Config) -> None:
        self.config = config
        self._engines: dict[str, ScriptedProvider] = {}

    def models(self) -> list[ModelInfo]:
        return [ModelInfo(id=DEFAULT_MODEL, provider=self.name, context_window=1_000_000)]

    def _load(self, model: str) -> ScriptedProvider:
        engine = self._engines.get(model)
        if engine is None:
            path = script_path(self.config, model)
            if path is None:
                raise ConfigError(NO_SCRIPT)
            replies, loop = load_script(str(path))
            engine = self._engines[model] = ScriptedProvider(replies, loop=loop, name=self.name)
        return engine

    def check(self, model: str) -> None:
        self._load(model)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._load(request.model).stream(request)
