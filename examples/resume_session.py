"""Resuming a session by id: a second agent (as a later program would) continues the conversation.

Sessions live in a SQLite file (crab-store-sqlite) in a temporary folder here; the mock model's
replies are canned, but the second run is sent the whole earlier exchange.

Needs: crab-provider-mock and crab-store-sqlite, which the README's Quickstart does not
install: from a checkout, ``pip install ./kits/sql-kit ./plugins/store-sqlite``.
"""

import tempfile
from pathlib import Path

import crab

SCRIPTS = Path(__file__).parent / "scripts"


def agent(script: str, folder: str) -> crab.Agent:
    return crab.Agent(
        f"mock/{SCRIPTS / script}",
        plugins=["provider-mock", "store-sqlite"],
        store="sqlite",
        settings={"plugins.store-sqlite.path": f"{folder}/sessions.db"},
    )


with tempfile.TemporaryDirectory() as folder:
    with agent("resume_first.json", folder) as first:
        earlier = first.run_sync("My name is Ada.")
    print(f"first run: {earlier.text} (session {earlier.session_id})")

    with agent("resume_second.json", folder) as later:
        again = later.run_sync("What is my name?", session=earlier.session_id)
    print(f"resumed:   {again.text} (session {again.session_id})")
    print(f"same session: {again.session_id == earlier.session_id}")
