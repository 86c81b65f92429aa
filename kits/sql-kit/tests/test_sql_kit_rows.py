"""crab-sql-kit's row helpers against a real SQLite database: what goes in a row comes back whole."""

from __future__ import annotations

import sqlite3

import crab
import pytest
from crab_sql_kit import (
    SESSION_COLUMNS,
    decode_payload,
    entry_from_row,
    payload_json,
    session_from_row,
    session_totals,
    store_payload,
)

SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, workspace TEXT, created REAL, title TEXT, forked_from TEXT,
  fork_entry TEXT, meta TEXT, updated REAL, entry_count INTEGER DEFAULT 0, last_entry TEXT, handoff_seq INTEGER,
  usage_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
  cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0, reasoning_tokens INTEGER DEFAULT 0,
  cost REAL);
CREATE TABLE entries (session_id TEXT, id TEXT, parent_id TEXT, type TEXT, time REAL, payload TEXT, prompt TEXT);
CREATE TABLE prompts (sha256 TEXT PRIMARY KEY, text TEXT);
"""


def _entry(
    entry_type: crab.storage.EntryType, payload: dict[str, object], at: float, entry_id: str
) -> crab.storage.Entry:
    return crab.storage.Entry(id=entry_id, session_id="s1", parent_id=None, type=entry_type, time=at, payload=payload)


def _assistant(tokens: int, cost: float | None) -> dict[str, object]:
    usage = crab.messages.Usage(input_tokens=tokens, output_tokens=1, cost=cost)
    return {"role": "assistant", "content": "hi", "usage": crab.messages.usage_to_dict(usage)}


def test_entries_and_their_session_row_round_trip_through_sqlite():
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA)
    db.execute(
        "INSERT INTO sessions (id, workspace, created, title, meta, updated) VALUES (?, ?, ?, ?, ?, ?)",
        ("s1", "/w", 1.0, "t", payload_json({"crab.channel": "telegram"}), 1.0),
    )
    entries = [
        _entry("event", {"kind": "system_prompt", "text": "You are crab."}, 2.0, "e1"),
        _entry("message", _assistant(10, 0.5), 3.0, "e2"),
        _entry("anchor", {"kind": "handoff", "summary": "so far"}, 4.0, "e3"),
        _entry("message", _assistant(5, None), 5.0, "e4"),
    ]
    for entry in entries:
        stored = store_payload(entry.type, entry.payload)
        if stored.prompt_sha is not None:
            db.execute("INSERT OR IGNORE INTO prompts VALUES (?, ?)", (stored.prompt_sha, stored.prompt_text))
        db.execute(
            "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?)",
            (entry.session_id, entry.id, entry.parent_id, entry.type, entry.time, stored.json, stored.prompt_sha),
        )
    totals = session_totals(list(enumerate(entries)))
    assert totals is not None
    db.execute(*totals.update("s1"))
    rows = db.execute(
        "SELECT e.session_id, e.id, e.parent_id, e.type, e.time, e.payload, p.text "
        "FROM entries e LEFT JOIN prompts p ON p.sha256 = e.prompt ORDER BY e.time"
    ).fetchall()
    assert [entry_from_row(row) for row in rows] == entries
    stored_prompt = db.execute("SELECT payload FROM entries WHERE id = 'e1'").fetchone()[0]
    assert '"text":null' in stored_prompt  # kept once, apart from the row
    info = session_from_row(db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions").fetchone())
    assert (info.entry_count, info.updated, info.meta) == (4, 5.0, {"crab.channel": "telegram"})
    assert info.usage is not None and (info.usage.input_tokens, info.usage.cost) == (15, 0.5)
    assert db.execute("SELECT handoff_seq, last_entry FROM sessions").fetchone() == (2, "e4")


def test_a_session_row_without_counted_usage_has_none():
    row = ("s", "/w", 1.0, None, None, None, "{}", 1.0, 0, 0, 0, 0, 0, 0, 0, None)
    assert session_from_row(row).usage is None
    assert session_totals([]) is None


def test_payload_json_escapes_what_cannot_be_utf8_and_refuses_what_is_not_json():
    assert payload_json({"a": "é"}) == '{"a":"é"}'
    assert payload_json({"a": "\ud800"}) == '{"a":"\\ud800"}'  # a lone surrogate: ASCII escapes instead
    with pytest.raises(crab.StoreError, match="cannot store a payload that is not JSON"):
        payload_json({"a": object()})


def test_a_prompt_the_store_cannot_keep_apart_stays_in_the_json():
    stored = store_payload("event", {"kind": "system_prompt", "text": "x"}, storable=lambda text: False)
    assert (stored.prompt_sha, decode_payload(stored.json, None)) == (None, {"kind": "system_prompt", "text": "x"})
