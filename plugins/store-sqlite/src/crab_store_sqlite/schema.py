"""The database schema as numbered migrations, and applying the ones a database has not had yet.

Applied migrations are rows of the ``migrations`` table. Migration 2 (the full-text index) needs
FTS5; on an SQLite without it, it stays pending and is applied, with a backfill, by the first
crab whose SQLite has FTS5.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from crab import StoreError
from crab_sql_kit import decode_payload

from crab_store_sqlite.rows import fts_text


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]
    needs_fts: bool = False


def _tables(conn: sqlite3.Connection) -> None:
    # One statement at a time: ``executescript`` would commit the migration transaction early.
    script = """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            workspace TEXT NOT NULL,
            created REAL NOT NULL,
            title TEXT,
            forked_from TEXT,
            fork_entry TEXT,
            meta TEXT NOT NULL DEFAULT '{}',
            updated REAL NOT NULL,
            entry_count INTEGER NOT NULL DEFAULT 0,
            last_entry TEXT,
            handoff_seq INTEGER NOT NULL DEFAULT 0,
            usage_count INTEGER NOT NULL DEFAULT 0,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cache_read_tokens INTEGER NOT NULL DEFAULT 0,
            cache_write_tokens INTEGER NOT NULL DEFAULT 0,
            reasoning_tokens INTEGER NOT NULL DEFAULT 0,
            cost REAL
        );
        CREATE INDEX sessions_by_updated ON sessions (updated DESC, id DESC);
        CREATE INDEX sessions_by_workspace ON sessions (workspace, updated DESC, id DESC);

        CREATE TABLE system_prompts (
            sha256 TEXT PRIMARY KEY,
            text TEXT NOT NULL
        ) WITHOUT ROWID;

        CREATE TABLE entries (
            rid INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions (id),
            seq INTEGER NOT NULL,
            id TEXT NOT NULL,
            parent_id TEXT,
            type TEXT NOT NULL,
            time REAL NOT NULL,
            payload TEXT NOT NULL,
            system_prompt TEXT REFERENCES system_prompts (sha256),
            UNIQUE (session_id, seq)
        );
        CREATE INDEX entries_by_id ON entries (session_id, id);
    """
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _full_text(conn: sqlite3.Connection) -> None:
    # Contentless: the text is already in ``entries.payload``; the index only maps words to rows.
    conn.execute(
        "CREATE VIRTUAL TABLE entry_fts USING fts5(text, content='', tokenize='unicode61 remove_diacritics 0')"
    )
    rows = conn.execute(
        "SELECT e.rid, e.type, e.payload, p.text FROM entries e "
        "LEFT JOIN system_prompts p ON p.sha256 = e.system_prompt ORDER BY e.rid"
    )
    for rid, kind, payload, prompt in rows:
        text = fts_text(kind, decode_payload(payload, prompt))
        if text:
            conn.execute("INSERT INTO entry_fts (rowid, text) VALUES (?, ?)", (rid, text))


def _blobs(conn: sqlite3.Connection) -> None:
    # Image bytes, once per distinct image, named by sha256 (crab.storage.BlobStore); rows are never updated.
    conn.execute("CREATE TABLE blobs (sha256 TEXT PRIMARY KEY, data BLOB NOT NULL)")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "sessions, entries and system prompts", _tables),
    Migration(2, "full-text index of entries (FTS5)", _full_text, needs_fts=True),
    Migration(3, "image blobs by sha256", _blobs),
)


def has_fts5(conn: sqlite3.Connection) -> bool:
    """Whether this Python's SQLite was built with FTS5."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.crab_fts5_probe USING fts5(x)")
    except sqlite3.OperationalError:
        return False
    conn.execute("DROP TABLE temp.crab_fts5_probe")
    return True


def _applied(conn: sqlite3.Connection) -> set[int]:
    return {row[0] for row in conn.execute("SELECT version FROM migrations")}


def _check_known(applied: set[int]) -> None:
    newer = applied - {m.version for m in MIGRATIONS}
    if newer:
        raise StoreError(
            f"this database has migration {max(newer)}, newer than this crab-store-sqlite knows; "
            "upgrade crab-store-sqlite"
        )


def _pending(conn: sqlite3.Connection, fts: bool) -> bool:
    """Whether any migration this store would apply is missing (read-only check)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'").fetchone()
    if not exists:
        return True
    applied = _applied(conn)
    return any(m.version not in applied and (fts or not m.needs_fts) for m in MIGRATIONS)


def migrate(conn: sqlite3.Connection, *, fts: bool) -> set[int]:
    """Apply pending migrations in one write transaction; returns the versions now applied.

    ``BEGIN IMMEDIATE`` makes a second process opening the same new database wait, then find
    the work done, instead of racing to create the same tables. An up-to-date database is only
    read, so opening a store never waits behind another process's write.
    """
    if not _pending(conn, fts):
        applied = _applied(conn)
        _check_known(applied)
        return applied
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied REAL NOT NULL)"
        )
        applied = _applied(conn)
        _check_known(applied)
        for migration in MIGRATIONS:
            if migration.version in applied or (migration.needs_fts and not fts):
                continue
            migration.apply(conn)
            conn.execute(
                "INSERT INTO migrations (version, name, applied) VALUES (?, ?, ?)",
                (migration.version, migration.name, time.time()),
            )
            applied.add(migration.version)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return applied
