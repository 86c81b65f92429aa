"""The JSON-lines renderer: every event as one JSON object per line on stdout (docs/format.md)."""

from __future__ import annotations

from crab._contracts.events import Event
from crab._contracts.renderers import RenderTarget
from crab._values.event_json import event_to_dict
from crab._values.utf8 import json_text


class JsonlRenderer:
    def __init__(self, target: RenderTarget) -> None:
        self.target = target

    def handle(self, event: Event) -> None:
        self.target.out.write(json_text(event_to_dict(event)) + "\n")
        self.target.out.flush()

    def close(self) -> None:
        self.target.out.flush()
