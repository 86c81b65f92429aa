"""Red team (issue 38: "the request prefix stays the same, as an invariant of the loop"): a plugin
whose ``crab_system_prompt`` part varies from turn to turn (a clock, a git status, a counter:
easy to write, and docs/hooks.md only promises one system prompt per *turn*) changes the
system prompt of every turn, and so the whole cached prefix, silently: nothing keeps a session's
system prompt, nothing tells the user or the plugin's author. Found by asking what crab does with
such a plugin (``Agent.system_prompt`` asks every plugin again at each turn's first request).

What would hold: the loop keeps a session's system prompt until the configuration, the tool set
or a compaction changes it (what varies belongs in ``crab_prompt_submit`` context, a recorded
message), or at least says once which plugin's part changed. ``Agent.system_prompt`` now
gathers a session's system prompt once per live session, again after a compaction."""

from __future__ import annotations

import itertools
from typing import Any

import crab


class Clock:
    """A system-prompt part that changes on every call, as a real clock's would."""

    def __init__(self) -> None:
        self.ticks = itertools.count()

    @crab.hookimpl
    def crab_system_prompt(self) -> str:
        return f"Local time: 08:{next(self.ticks):02d}"


def test_a_plugins_varying_part_does_not_change_the_sessions_system_prompt(crab_agent: Any) -> None:
    h = crab_agent([[{"text": "one"}], [{"text": "two"}], [{"text": "three"}]], plugins={"clock": Clock()})
    for prompt in ("first", "second", "third"):
        h.run(prompt)
    systems = {request.system for request in h.requests}
    assert len(systems) == 1, f"{len(systems)} system prompts in one session of {len(h.requests)} requests"
