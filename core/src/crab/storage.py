"""What a session store keeps and exchanges, beside the ``crab.Store`` protocol itself: sessions,
entries, search hits, the optional capabilities (``BlobStore``, ``SessionImporter``), crab's ids
and the interchange format (docs/storage.md)."""

from crab._contracts.storage import (
    ENTRY_TYPES,
    INTERCHANGE_VERSION,
    SESSION_HEADER_KEY,
    BlobStore,
    Entry,
    EntryType,
    SearchHit,
    SessionImporter,
    SessionInfo,
)
from crab._values.entries import (
    entry_from_dict,
    entry_text,
    entry_to_dict,
    new_entry_id,
    new_session_id,
    search_hit,
    session_from_header,
    session_header,
)

__all__ = [
    "ENTRY_TYPES",
    "INTERCHANGE_VERSION",
    "SESSION_HEADER_KEY",
    "BlobStore",
    "Entry",
    "EntryType",
    "SearchHit",
    "SessionImporter",
    "SessionInfo",
    "entry_from_dict",
    "entry_text",
    "entry_to_dict",
    "new_entry_id",
    "new_session_id",
    "search_hit",
    "session_from_header",
    "session_header",
]
