"""The JSON-lines renderer: every event as one JSON object per line on stdout (docs/format.md)."""

from __future__ import annotations

import json

from crab.events import Event, event_to_dict
from crab.render import RenderTarget


class JsonlRenderer:
    def __init__(self, target: RenderTarget) -> None:
        self.target = target

    def handle(self, event: Event) -> None:
        self.target.out.write(json.dumps(event_to_dict(event), ensure_ascii=False) + "\n")
        self.target.out.flush()

    def close(self) -> None:
        self.target.out.flush()
