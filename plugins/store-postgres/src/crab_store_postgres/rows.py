"""How an entry becomes a row and back: payload JSON, system prompts kept once, usage, search words.

Payloads are stored as JSON text, not ``jsonb``: ``jsonb`` refuses ``\\u0000`` and reorders keys,
and the contract wants every payload back exactly. A ``system_prompt`` event's ``text`` is stored
once in ``system_prompts`` (keyed by its sha256) and left as ``null`` in the row's payload.

Search words are cut out here, not by Postgres' text-search parser: that parser follows the
database's locale (in a ``C`` locale "ü" is not a letter) and keeps e-mail addresses and URLs
whole, while crab's stores all find a word inside them. So a row's ``search`` column is
``array_to_tsvector`` of its distinct lower-case words, and a query is a ``tsquery`` of word
prefixes, both made by the functions below.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crab import Entry, EntryType, StoreError, Usage, entry_text, usage_from_dict

_WORD = re.compile(r"[^\W_]+")

MAX_WORD = 200
"""Longer words are indexed (and searched) by their first 200 characters, a prefix of the word."""

MAX_INDEX_CHARS = 200_000
"""Distinct words kept per entry, in characters; an entry with more is marked incomplete and always scanned."""


@dataclass(frozen=True, slots=True)
class StoredPayload:
    """The payload as the ``entries`` row holds it, and the system prompt kept apart, if any."""

    json: str
    prompt_sha: str | None = None
    prompt_text: str | None = None


def dumps(obj: Any) -> str:
    """Compact JSON; ASCII escapes when the text cannot be UTF-8 (lone surrogates)."""
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"cannot store a payload that is not JSON: {exc}") from None
    if not encodable(text):
        text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    return text


def encodable(text: str) -> bool:
    """Whether Postgres can take ``text``: valid UTF-8 and no NUL character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def store_payload(type: EntryType, payload: Mapping[str, Any]) -> StoredPayload:
    text = payload.get("text")
    if type == "event" and payload.get("kind") == "system_prompt" and isinstance(text, str) and encodable(text):
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return StoredPayload(dumps({**payload, "text": None}), sha, text)
    return StoredPayload(dumps(payload))


def decode_payload(stored: str, prompt_text: str | None) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(stored)
    if prompt_text is not None:
        payload["text"] = prompt_text
    return payload


def usage_of(type: str, payload: Mapping[str, Any]) -> Usage | None:
    """The usage an entry adds to its session's totals: assistant messages' ``usage`` only.

    ``model_call`` events repeat the same numbers, so counting both would double them.
    """
    if type != "message" or payload.get("role") != "assistant":
        return None
    usage = payload.get("usage")
    if not isinstance(usage, Mapping):
        return None
    try:
        return usage_from_dict(dict(usage))
    except (TypeError, ValueError):
        return None


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
