"""The ``mock`` provider: finds the script file in config and replays it with the scripted engine."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from crab.config import Config
from crab.errors import ConfigError
from crab.events import StreamEvent
from crab.providers import ModelInfo, ModelRequest
from crab.testing.scripted import ScriptedProvider, load_script

NO_SCRIPT = (
    "the mock provider needs a script: pass --script FILE (see examples/tour.json) "
    "or set [plugins.provider-mock] script"
)


def script_path(config: Config) -> Path | None:
    """``crab.script`` (from ``--script``) or ``[plugins.provider-mock] script``, if set."""
    value = config.get("crab.script") or config.plugin_settings("provider-mock").get("script")
    return Path(str(value)).expanduser() if value else None


class ScriptFileProvider:
    """Loads its script on first use, so listing providers never touches the file."""

    name = "mock"

    def __init__(self, config: Config) -> None:
        self.config = config
        self._engine: ScriptedProvider | None = None

    def models(self) -> list[ModelInfo]:
        return [ModelInfo(id="scripted", provider=self.name, context_window=1_000_000)]

    def _load(self) -> ScriptedProvider:
        if self._engine is None:
            path = script_path(self.config)
            if path is None:
                raise ConfigError(NO_SCRIPT)
            replies, loop = load_script(str(path))
            self._engine = ScriptedProvider(replies, loop=loop, name=self.name)
        return self._engine

    def check(self, model: str) -> None:
        self._load()

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._load().stream(request)
