"""How an entry becomes a row and back: payload JSON, system prompts kept once, usage, search text.

A ``system_prompt`` event's ``text`` is stored once in ``system_prompts`` (keyed by its sha256)
and left as ``null`` in the row's payload, so the key keeps its place when it is filled back in.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crab import Entry, EntryType, StoreError, Usage, entry_text, usage_from_dict

_FTS_TOKEN = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class StoredPayload:
    """The payload as the ``entries`` row holds it, and the system prompt kept apart, if any."""

    json: str
    prompt_sha: str | None = None
    prompt_text: str | None = None


def dumps(obj: Any) -> str:
    """Compact JSON; falls back to ASCII escapes for text SQLite cannot take (lone surrogates)."""
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"cannot store a payload that is not JSON: {exc}") from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    return text


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def store_payload(type: EntryType, payload: Mapping[str, Any]) -> StoredPayload:
    text = payload.get("text")
    if type == "event" and payload.get("kind") == "system_prompt" and isinstance(text, str) and _encodable(text):
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

    ``model_call`` events repeat the same numbers, so counting both would double them; the
    assistant message is what every store, fork and migration keeps.
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


def fts_text(type: str, payload: Mapping[str, Any]) -> str:
    """What the full-text index holds for an entry: ``entry_text``, made safe for SQLite."""
    text = entry_text(Entry(id="", session_id="", parent_id=None, type=type, time=0.0, payload=payload))  # type: ignore[arg-type]
    return text if _encodable(text) else text.encode("utf-8", "replace").decode("utf-8")


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
