"""Crab's own notes in a session's history (the progressive view's ``[crab]`` schema note, the
compacted tail's lead-in) are not shown as what the user said: not in ``crab chat``'s recap of a
resumed session, not as a "User" section of ``crab sessions export``."""

from __future__ import annotations

from pathlib import Path

import crab
from crab._cli.chat_sessions import recap
from crab._cli.sessions import export_markdown
from crab.testing import AgentHarness


@crab.tool
def lookup(term: str) -> str:
    """Look a term up."""
    return f"{term}: found"


class Tools:
    @crab.hookimpl
    def crab_tools(self, config: object) -> list[crab.Tool]:
        return [lookup]


def test_recap_and_export_leave_crabs_notes_out(tmp_path: Path) -> None:
    replies = [
        [{"text": "It is found."}],
        [{"text": "SUMMARY: looked up x."}],
        [{"text": "Anything else?"}],
    ]
    harness = AgentHarness(replies, plugins={"tools": Tools()}, workspace=tmp_path)
    try:
        harness.run("what is x? use $lookup")
        assert any(m.content.startswith("[crab]") for m in harness.session.messages)  # the note is there
        assert harness.run("/compact").error is None
        harness.run("thanks")
        resumed = harness.run_async(harness.agent.resume(harness.session.id))
        lines = recap(resumed).splitlines()
        assert not [line for line in lines if "[crab]" in line or "was compacted" in line], lines
        assert lines[-2:] == ["> thanks", "Anything else?"]
        info = harness.run_async(harness.store.get_session(harness.session.id))
        entries = harness.run_async(harness.store.entries(harness.session.id))
        markdown = "\n".join(export_markdown(info, entries))
        assert markdown.count("## User") == 2
        assert "## crab · " in markdown and "[crab] Full schema of `lookup`" in markdown
    finally:
        harness.close()
