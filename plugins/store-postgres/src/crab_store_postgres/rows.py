"""What PostgreSQL adds to core's row helpers: which text it can take, and the search words.

Payload JSON, the system prompt kept once and usage are core's (``crab.store_payload``,
``crab.decode_payload``, ``crab.entry_usage``), shared with crab-store-sqlite. Payloads are
stored as JSON text, not ``jsonb``: ``jsonb`` refuses ``\\u0000`` and reorders keys, and the
contract wants every payload back exactly. A ``system_prompt`` event's ``text`` is stored once in
``system_prompts`` (keyed by its sha256) and left as ``null`` in the row's payload; a prompt that
``encodable`` refuses stays inside the JSON.

Search words are cut out here, not by Postgres' text-search parser: that parser follows the
database's locale (in a ``C`` locale "ü" is not a letter) and keeps e-mail addresses and URLs
whole, while crab's stores all find a word inside them. So a row's ``search`` column is
``array_to_tsvector`` of its distinct lower-case words, and a query is a ``tsquery`` of word
prefixes, both made by the functions below.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from crab.storage import Entry, entry_text
from crab_sql_kit import utf8_encodable

_WORD = re.compile(r"[^\W_]+")

MAX_WORD = 200
"""Longer words are indexed (and searched) by their first 200 characters, a prefix of the word."""

MAX_INDEX_CHARS = 200_000
"""Distinct words kept per entry, in characters; an entry with more is marked incomplete and always scanned."""


def encodable(text: str) -> bool:
    """Whether Postgres can take ``text``: valid UTF-8 and no NUL character."""
    return utf8_encodable(text) and "\x00" not in text


def _words(text: str) -> list[str]:
    return [w[:MAX_WORD] for w in _WORD.findall(text.lower())]


def search_words(type: str, payload: Mapping[str, Any]) -> tuple[list[str], bool]:
    """The distinct words of an entry for its ``search`` column, and whether they are all there."""
    text = entry_text(Entry(id="", session_id="", parent_id=None, type=type, time=0.0, payload=payload))  # type: ignore[arg-type]
    kept: list[str] = []
    size = 0
    for word in dict.fromkeys(_words(text)):
        size += len(word) + 1
        if size > MAX_INDEX_CHARS:
            return kept, False
        kept.append(word)
    return kept, True


def search_query(words: list[str]) -> str | None:
    """A ``tsquery`` needing every word's tokens as word prefixes; None when no word has a letter or digit.

    Tokens hold only letters and digits, so quoting them is enough for the query to never be
    tsquery syntax. Matches are checked again against the words afterwards.
    """
    tokens = dict.fromkeys(t for word in words for t in _words(word))
    return " & ".join(f"'{t}':*" for t in tokens) if tokens else None
