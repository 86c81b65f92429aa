"""crab-sql-kit: what session stores that keep entries as SQL rows share, so each holds only its SQL.

Payloads as compact JSON text (``payload_json``, ``utf8_encodable``), a ``system_prompt`` event's
text kept once apart from its row (``store_payload``, ``StoredPayload``, ``decode_payload``), entry
and session rows read back (``entry_from_row``, ``session_from_row`` over ``SESSION_COLUMNS``) and
the usage totals entries written together add to their session row (``session_totals``,
``SessionTotals``, ``entry_usage``). Used by crab-store-sqlite and crab-store-postgres. A kit, not
a plugin: no entry point. These names were in ``crab`` once (API 1.2); they are only here now.
"""

from __future__ import annotations

from crab_sql_kit._rows import (
    SESSION_COLUMNS,
    SessionTotals,
    StoredPayload,
    decode_payload,
    entry_from_row,
    entry_usage,
    payload_json,
    session_from_row,
    session_totals,
    store_payload,
    utf8_encodable,
)

__all__ = [
    "SESSION_COLUMNS",
    "SessionTotals",
    "StoredPayload",
    "decode_payload",
    "entry_from_row",
    "entry_usage",
    "payload_json",
    "session_from_row",
    "session_totals",
    "store_payload",
    "utf8_encodable",
]
