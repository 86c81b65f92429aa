"""How an entry's search text reaches SQLite's full-text index, and how a query becomes FTS5.

The rest of a row (payload JSON, the system prompt kept once, usage) is core's
(``crab.store_payload``, ``crab.decode_payload``, ``crab.entry_usage``), shared with crab-store-postgres.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from crab.storage import Entry, entry_text
from crab_sql_kit import utf8_encodable

_FTS_TOKEN = re.compile(r"[^\W_]+")


def fts_text(type: str, payload: Mapping[str, Any]) -> str:
    """What the full-text index holds for an entry: ``entry_text``, made safe for SQLite."""
    text = entry_text(Entry(id="", session_id="", parent_id=None, type=type, time=0.0, payload=payload))  # type: ignore[arg-type]
    return text if utf8_encodable(text) else text.encode("utf-8", "replace").decode("utf-8")


def fts_query(words: list[str]) -> str | None:
    """An FTS5 query needing every word (as a word prefix); None when no word has a letter or digit.

    Each word becomes a quoted phrase of its tokens, so punctuation in the query is never FTS
    syntax. Matches are checked again against the words afterwards.
    """
    terms = []
    for word in words:
        tokens = _FTS_TOKEN.findall(word)
        if tokens:
            terms.append('"' + " ".join(tokens) + '"*')
    return " AND ".join(terms) if terms else None
