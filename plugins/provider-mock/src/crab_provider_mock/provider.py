"""The ``mock`` provider: the model id names the script file, replayed with the scripted engine.

``crab run -m mock/examples/tour.json "…"`` replays ``examples/tour.json`` (relative paths are
read from the current folder); a bare name that is one of the scripts shipped in this package
(``crab run -m mock/tour "…"``) replays that script, so a pip user has a demo with no file of
their own. The model ``scripted`` (the default when no model is given) reads
``[plugins.provider-mock] script`` instead. Core knows nothing of scripts: the model id is the
provider-agnostic way every provider is told what to run.

``[plugins.provider-mock] pick = "conversation"`` picks each reply from the request itself (how
many replies its conversation holds), so a session whose model calls run in different processes
(crab-temporal's workers) replays its script; the default, ``"order"``, counts this process's
calls, which scripts driving a child agent or a compaction (requests of other conversations
taking their turn in the same script) need.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from crab import Config, ConfigError, ModelInfo, ModelRequest
from crab.events import StreamEvent
from crab.messages import AssistantMessage
from crab.testing import ScriptedProvider, load_script

DEFAULT_MODEL = "scripted"
SCRIPTS = Path(__file__).parent / "scripts"
"""Scripts shipped in the package, named by their file stem (``tour``)."""
NO_SCRIPT = (
    "the mock provider needs a script: try -m mock/tour (a packaged tour), pass -m mock/FILE,"
    " or set [plugins.provider-mock] script"
)


def packaged_scripts() -> dict[str, Path]:
    """The scripts shipped in this package, by name."""
    return {path.stem: path for path in sorted(SCRIPTS.glob("*.json"))}


def script_path(config: Config, model: str = DEFAULT_MODEL) -> Path | None:
    """The script a model id names: a packaged script's name, a file, or ``[plugins.provider-mock] script``.

    A bare packaged name (``tour``) wins over a file of that name in the current folder, so
    ``-m mock/tour`` means the same everywhere; any other id is a path.
    """
    value = model if model and model != DEFAULT_MODEL else config.plugin_settings("provider-mock").get("script")
    if not value:
        return None
    packaged = packaged_scripts().get(str(value))
    return packaged if packaged is not None else Path(str(value)).expanduser().resolve()


Reply = Sequence[Mapping[str, Any]]


def reply_for(replies: Sequence[Reply], loop: bool, request: ModelRequest) -> Reply:
    """The reply for ``request`` by its conversation: the one after as many replies as it holds
    (failed and aborted replies never reach a provider again, so they are not counted)."""
    held = sum(1 for message in request.messages if isinstance(message, AssistantMessage))
    if loop and replies:
        held %= len(replies)
    if held < len(replies):
        return replies[held]
    missing = f"the script has no reply for model call {held + 1} (it has {len(replies)})"
    return [{"error": missing, "kind": "invalid_request"}]


class ScriptFileProvider:
    """Loads a script on first use, so listing providers never touches a file."""

    name = "mock"

    def __init__(self, config: Config) -> None:
        self.config = config
        self._engines: dict[str, ScriptedProvider] = {}

    def models(self) -> list[ModelInfo]:
        names = [DEFAULT_MODEL, *packaged_scripts()]
        return [ModelInfo(id=name, provider=self.name, context_window=1_000_000) for name in names]

    def _load(self, model: str) -> ScriptedProvider:
        engine = self._engines.get(model)
        if engine is None:
            path = script_path(self.config, model)
            if path is None:
                raise ConfigError(NO_SCRIPT)
            replies, loop = load_script(str(path))
            if self.config.plugin_settings("provider-mock").get("pick") == "conversation":
                engine = ScriptedProvider(lambda request: reply_for(replies, loop, request), name=self.name)
            else:
                engine = ScriptedProvider(replies, loop=loop, name=self.name)
            self._engines[model] = engine
        return engine

    def check(self, model: str) -> None:
        self._load(model)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._load(request.model).stream(request)
