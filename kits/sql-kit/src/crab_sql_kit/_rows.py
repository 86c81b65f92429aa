"""What SQL session stores share: payload JSON, system prompts kept once, usage totals, session rows.

A store that keeps entries as rows (crab-store-sqlite, crab-store-postgres) stores a payload as
compact JSON text, keeps a ``system_prompt`` event's ``text`` once apart from the row (keyed by
its sha256, ``null`` in the payload so the key keeps its place), folds entries written in bulk
(imports, forks) into its session row's summary and reads that row back into a ``SessionInfo``.
These are those pieces, so each store holds only its SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crab import StoreError
from crab.messages import Usage, usage_from_dict
from crab.storage import Entry, EntryType, SessionInfo

SESSION_COLUMNS = (
    "id, workspace, created, title, forked_from, fork_entry, meta, updated, entry_count, usage_count, "
    "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost"
)
"""The session row's columns, in the order ``session_from_row`` reads them."""


@dataclass(frozen=True, slots=True)
class StoredPayload:
    """A payload as an entry row holds it (``json``), and its system prompt kept apart, if any."""

    json: str
    prompt_sha: str | None = None
    prompt_text: str | None = None


def utf8_encodable(text: str) -> bool:
    """Whether ``text`` is valid UTF-8 (holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def payload_json(obj: Any) -> str:
    """Compact JSON text; ASCII escapes when the text cannot be UTF-8 (lone surrogates).

    Raises ``StoreError`` when ``obj`` is not JSON-able.
    """
    import json

    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"cannot store a payload that is not JSON: {exc}") from None
    if not utf8_encodable(text):
        text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    return text


def store_payload(
    type: EntryType, payload: Mapping[str, Any], *, storable: Callable[[str], bool] = utf8_encodable
) -> StoredPayload:
    """``payload`` as a row holds it: a ``system_prompt`` event's text is kept apart (by sha256).

    A prompt that ``storable`` refuses stays inside the JSON (escaped) instead.
    """
    text = payload.get("text")
    if type == "event" and payload.get("kind") == "system_prompt" and isinstance(text, str) and storable(text):
        import hashlib

        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return StoredPayload(payload_json({**payload, "text": None}), sha, text)
    return StoredPayload(payload_json(payload))


def decode_payload(stored: str, prompt_text: str | None) -> dict[str, Any]:
    """Inverse of ``store_payload``: the row's JSON with its system prompt (if any) filled back in."""
    import json

    payload: dict[str, Any] = json.loads(stored)
    if prompt_text is not None:
        payload["text"] = prompt_text
    return payload


def entry_from_row(row: tuple[Any, ...]) -> Entry:
    """An ``Entry`` from a row of ``(session_id, id, parent_id, type, time, payload JSON, prompt text)``."""
    session_id, id, parent_id, type, at, payload, prompt = row
    return Entry(
        id=id, session_id=session_id, parent_id=parent_id, type=type, time=at, payload=decode_payload(payload, prompt)
    )


def entry_usage(type: str, payload: Mapping[str, Any]) -> Usage | None:
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


def session_from_row(row: tuple[Any, ...]) -> SessionInfo:
    """A ``SessionInfo`` from a row of ``SESSION_COLUMNS`` (``meta`` as JSON text; usage when counted)."""
    (id, workspace, created, title, forked_from, fork_entry, meta, updated, count, usage_count, *tokens) = row
    usage = None
    if usage_count:
        usage = Usage(
            input_tokens=int(tokens[0]),
            output_tokens=int(tokens[1]),
            cache_read_tokens=int(tokens[2]),
            cache_write_tokens=int(tokens[3]),
            reasoning_tokens=int(tokens[4]),
            cost=tokens[5],
        )
    return SessionInfo(
        id=id,
        workspace=workspace,
        created=created,
        title=title,
        forked_from=forked_from,
        fork_entry=fork_entry,
        meta=decode_payload(meta, None),
        updated=updated,
        entry_count=count,
        usage=usage,
    )


@dataclass(frozen=True, slots=True)
class SessionTotals:
    """What entries stored together add to their session's row: position, last entry, handoff, usage."""

    entry_count: int
    last_entry: str
    updated: float
    handoff_seq: int | None
    usage_count: int
    usage: Usage
    has_cost: bool

    def update(self, session_id: str, mark: str = "?") -> tuple[str, tuple[Any, ...]]:
        """The ``UPDATE sessions`` statement folding these totals in, and its values; ``mark`` is
        the driver's placeholder (``?`` for sqlite3, ``%s`` for psycopg)."""
        sql = (
            "UPDATE sessions SET entry_count = ?, last_entry = ?, updated = ?, "
            "handoff_seq = COALESCE(?, handoff_seq), usage_count = usage_count + ?, "
            "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
            "cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?, "
            "reasoning_tokens = reasoning_tokens + ?, "
            "cost = CASE WHEN ? THEN COALESCE(cost, 0) + ? ELSE cost END WHERE id = ?"
        ).replace("?", mark)
        usage = self.usage
        values = (
            self.entry_count,
            self.last_entry,
            self.updated,
            self.handoff_seq,
            self.usage_count,
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.reasoning_tokens,
            self.has_cost,
            usage.cost or 0.0,
            session_id,
        )
        return sql, values


def session_totals(added: Sequence[tuple[int, Entry]]) -> SessionTotals | None:
    """The totals of entries just stored at the given positions (in order); None when there are none.

    Usage counts as ``entry_usage`` says; the last ``handoff`` anchor gives ``handoff_seq``.
    """
    if not added:
        return None
    total = Usage()
    counted = 0
    has_cost = False
    handoff: int | None = None
    for seq, entry in added:
        usage = entry_usage(entry.type, entry.payload)
        if usage is not None:
            total = total + usage
            counted += 1
            has_cost = has_cost or usage.cost is not None
        if entry.type == "anchor" and entry.payload.get("kind") == "handoff":
            handoff = seq
    last_seq, last = added[-1]
    return SessionTotals(last_seq + 1, last.id, last.time, handoff, counted, total, has_cost)
