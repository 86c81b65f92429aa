"""``SqliteStore``: crab's ``Store`` contract on one SQLite database shared by every session.

WAL mode lets readers run beside a writer; each write is one ``BEGIN IMMEDIATE`` transaction, so
several processes appending at once queue on the busy timeout instead of failing or forking the
parent chain. The methods are ``async`` because the contract is; the queries they run are short
and local, so they run inline rather than on a thread (a thread hop costs more than the query).
"""

from __future__ import annotations

import random
import sqlite3
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from crab import ConfigError, StoreError
from crab.storage import ENTRY_TYPES, Entry, EntryType, SearchHit, SessionInfo, new_entry_id, new_session_id, search_hit
from crab_sql_kit import (
    SESSION_COLUMNS,
    StoredPayload,
    entry_from_row,
    payload_json,
    session_from_row,
    session_totals,
    store_payload,
)

from crab_store_sqlite.rows import fts_query, fts_text
from crab_store_sqlite.schema import has_fts5, migrate

_ENTRY_COLUMNS = "e.session_id, e.id, e.parent_id, e.type, e.time, e.payload, p.text"
_ENTRY_FROM = "entries e LEFT JOIN system_prompts p ON p.sha256 = e.system_prompt"


class FullTextSearchUnavailable(UserWarning):
    """This Python's SQLite has no FTS5; search scans entries instead of using an index."""


class SqliteStore:
    """Sessions and entries in one SQLite file; see docs/storage.md for the schema.

    ``synchronous="full"`` also survives power loss (each commit waits for the disk); the
    default ``"normal"`` survives a killed process, which is what the ``Store`` contract asks.
    ``fts=None`` uses FTS5 when this SQLite has it; ``False`` forces the scanning fallback.
    """

    name = "sqlite"

    def __init__(
        self,
        path: Path | str,
        *,
        busy_timeout: float = 10.0,
        synchronous: str = "normal",
        fts: bool | None = None,
    ) -> None:
        self.path = Path(path).expanduser()
        self.busy_timeout = busy_timeout
        if synchronous.lower() not in ("normal", "full"):
            raise StoreError(f'store-sqlite: synchronous must be "normal" or "full", not {synchronous!r}')
        self.synchronous = synchronous.lower()
        self._want_fts = fts
        self.fts = False
        self._indexing = False
        self._conn: sqlite3.Connection | None = None

    # --- connection -------------------------------------------------------------------------

    async def open(self) -> None:
        if self._conn is not None:
            return
        if str(self.path) == ":memory:":  # SQLite's in-memory database, under a shared store's name
            raise ConfigError(
                "plugins.store-sqlite.path :memory: (SQLite's in-memory database) keeps sessions in this process "
                'only, where no other crab can read them: name a database file, or set [crab] store = "memory"'
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot open the session database {self.path}: {exc}") from None
        # Switching a fresh database to WAL and migrating it need an exclusive lock, and SQLite
        # answers "database is locked" at once, without its busy handler, when two processes
        # upgrade from a shared lock together. So the whole opening is retried until busy_timeout.
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                conn, available, applied = self._connect()
                break
            except sqlite3.OperationalError as exc:
                if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() >= deadline:
                    raise StoreError(f"cannot open the session database {self.path}: {exc}") from None
                import asyncio  # here, not at import: crab --help loads this module and must stay fast

                await asyncio.sleep(0.02 + random.random() * 0.08)
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open the session database {self.path}: {exc}") from None
        # Whenever the index exists and this SQLite can write it, keep it complete, even when
        # searching by scan was asked for; an SQLite without FTS5 can do neither.
        self._indexing = available and 2 in applied
        self.fts = self._indexing and self._want_fts is not False
        if not available and self._want_fts is not False:
            warnings.warn(
                f"{self.path}: this Python's SQLite has no FTS5, so `crab sessions search` scans every entry",
                FullTextSearchUnavailable,
                stacklevel=2,
            )
        self._conn = conn

    def _connect(self) -> tuple[sqlite3.Connection, bool, set[int]]:
        """One attempt at opening: connection, pragmas, migrations; the connection is closed on failure."""
        # isolation_level=None: transactions are ours (BEGIN IMMEDIATE), not sqlite3's guesses.
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                warnings.warn(
                    f"{self.path}: SQLite refused WAL mode (got {mode}); writers will block readers", stacklevel=3
                )
            conn.execute(f"PRAGMA synchronous = {self.synchronous.upper()}")
            conn.execute("PRAGMA foreign_keys = ON")
            available = has_fts5(conn)
            want = available if self._want_fts is None else self._want_fts and available
            applied = migrate(conn, fts=want)
        except BaseException:
            conn.close()
            raise
        return conn, available, applied

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError("the SQLite store is not open (await store.open() first)")
        return self._conn

    @contextmanager
    def _transaction(self, begin: str = "BEGIN IMMEDIATE") -> Iterator[sqlite3.Connection]:
        """One transaction; a write one (the default) takes the write lock up front so it never
        has to upgrade a read lock, the usual source of SQLITE_BUSY deadlocks between processes."""
        conn = self.conn
        try:
            conn.execute(begin)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc} (another process holds the database too long?)") from None
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"{self.path}: {exc}") from None
            raise

    def _session_row(self, conn: sqlite3.Connection, session_id: str) -> tuple[Any, ...]:
        try:
            row = conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
        except UnicodeEncodeError:  # a command line's byte that is not UTF-8: no id crab made
            row = None
        if row is None:
            raise StoreError(f"no session {session_id!r} in the SQLite store at {self.path}")
        return cast(tuple[Any, ...], row)

    # --- Store ------------------------------------------------------------------------------

    async def create_session(
        self, workspace: str, *, title: str | None = None, meta: Mapping[str, Any] | None = None
    ) -> SessionInfo:
        now = time.time()
        with self._transaction() as conn:
            session_id = new_session_id()
            while conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
                session_id = new_session_id()
            conn.execute(
                "INSERT INTO sessions (id, workspace, created, title, meta, updated) VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, workspace, now, title, payload_json(dict(meta or {})), now),
            )
            return session_from_row(self._session_row(conn, session_id))

    async def get_session(self, session_id: str) -> SessionInfo:
        return session_from_row(self._session_row(self.conn, session_id))

    async def list_sessions(self, workspace: str | None = None, limit: int = 50) -> list[SessionInfo]:
        if workspace is None:
            rows = self.conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions ORDER BY updated DESC, id DESC LIMIT ?", (limit,)
            )
        else:
            rows = self.conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace = ? ORDER BY updated DESC, id DESC LIMIT ?",
                (workspace, limit),
            )
        return [session_from_row(row) for row in rows]

    async def append(self, session_id: str, type: EntryType, payload: Mapping[str, Any]) -> Entry:
        if type not in ENTRY_TYPES:
            raise StoreError(f"unknown entry type {type!r}")
        payload = dict(payload)
        stored = store_payload(type, payload)
        search_text = fts_text(type, payload) if self._indexing else ""
        with self._transaction() as conn:
            row = conn.execute("SELECT entry_count, last_entry FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise StoreError(f"no session {session_id!r} in the SQLite store at {self.path}")
            seq, parent = row
            # Taken under the write lock, so times follow append order across processes too.
            entry = Entry(new_entry_id(), session_id, parent, type, time.time(), payload)
            self._insert(conn, entry, seq, stored, search_text)
            self._add_to_session(conn, session_id, [(seq, entry)])
        return entry

    def _insert(
        self, conn: sqlite3.Connection, entry: Entry, seq: int, stored: StoredPayload, search_text: str
    ) -> None:
        if stored.prompt_sha is not None:
            conn.execute(
                "INSERT OR IGNORE INTO system_prompts (sha256, text) VALUES (?, ?)",
                (stored.prompt_sha, stored.prompt_text),
            )
        cursor = conn.execute(
            "INSERT INTO entries (session_id, seq, id, parent_id, type, time, payload, system_prompt) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entry.session_id,
                seq,
                entry.id,
                entry.parent_id,
                entry.type,
                entry.time,
                stored.json,
                stored.prompt_sha,
            ),
        )
        if search_text:
            conn.execute("INSERT INTO entry_fts (rowid, text) VALUES (?, ?)", (cursor.lastrowid, search_text))

    @staticmethod
    def _add_to_session(conn: sqlite3.Connection, session_id: str, added: list[tuple[int, Entry]]) -> None:
        """Fold newly stored entries (with their positions) into the session's summary columns."""
        totals = session_totals(added)
        if totals is not None:
            conn.execute(*totals.update(session_id))

    async def put_blob(self, data: bytes) -> str:
        """Keep ``data`` once in the ``blobs`` table (``crab.storage.BlobStore``); returns its sha256."""
        import hashlib

        digest = hashlib.sha256(data).hexdigest()
        with self._transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO blobs (sha256, data) VALUES (?, ?)", (digest, bytes(data)))
        return digest

    async def get_blob(self, sha256: str) -> bytes | None:
        try:
            row = self.conn.execute("SELECT data FROM blobs WHERE sha256 = ?", (sha256,)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from None
        return None if row is None else bytes(row[0])

    async def entries(self, session_id: str, *, since_handoff: bool = False) -> list[Entry]:
        # One read transaction, so the handoff position and the rows come from the same snapshot.
        with self._transaction("BEGIN") as conn:
            row = conn.execute("SELECT handoff_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise StoreError(f"no session {session_id!r} in the SQLite store at {self.path}")
            start = row[0] if since_handoff else 0
            rows = conn.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM {_ENTRY_FROM} WHERE e.session_id = ? AND e.seq >= ? ORDER BY e.seq",
                (session_id, start),
            ).fetchall()
        return [entry_from_row(r) for r in rows]

    async def search(
        self, query: str, *, session_id: str | None = None, workspace: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        words = [w.lower() for w in query.split() if w]
        if not words or limit <= 0:
            return []
        where: list[str] = []
        params: list[Any] = []
        if session_id is not None:
            where.append("e.session_id = ?")
            params.append(session_id)
        if workspace is not None:
            where.append("e.session_id IN (SELECT id FROM sessions WHERE workspace = ?)")
            params.append(workspace)
        match = fts_query(words) if self.fts else None
        if match is not None:
            sql = (
                f"SELECT {_ENTRY_COLUMNS} FROM entry_fts JOIN entries e ON e.rid = entry_fts.rowid "
                "LEFT JOIN system_prompts p ON p.sha256 = e.system_prompt "
                f"WHERE entry_fts MATCH ? {''.join(' AND ' + w for w in where)} ORDER BY e.time DESC, e.rid DESC"
            )
            params.insert(0, match)
        else:
            # No index (or no word it could use): narrow with LIKE where JSON spells the word as is.
            for word in words:
                if word.isascii() and word.isprintable() and not any(c in word for c in '"\\%_'):
                    where.append("e.payload LIKE ?")
                    params.append(f"%{word}%")
            sql = f"SELECT {_ENTRY_COLUMNS} FROM {_ENTRY_FROM}"
            if where:
                sql += " WHERE " + " AND ".join(where)
            sql += " ORDER BY e.time DESC, e.rid DESC"
        hits: list[SearchHit] = []
        try:
            for row in self.conn.execute(sql, params):
                hit = search_hit(entry_from_row(row), words)
                if hit is not None:
                    hits.append(hit)
                    if len(hits) >= limit:
                        break
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: search failed: {exc}") from None
        return hits

    async def fork(self, session_id: str, at_entry: str | None = None) -> SessionInfo:
        with self._transaction() as conn:
            origin = session_from_row(self._session_row(conn, session_id))
            if at_entry is None:
                cut = origin.entry_count or 0
            else:
                found = conn.execute(
                    "SELECT MIN(seq) FROM entries WHERE session_id = ? AND id = ?", (session_id, at_entry)
                ).fetchone()[0]
                if found is None:
                    raise StoreError(f"no entry {at_entry!r} in session {session_id}")
                cut = found + 1
            rows = conn.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM {_ENTRY_FROM} WHERE e.session_id = ? AND e.seq < ? ORDER BY e.seq",
                (session_id, cut),
            ).fetchall()
            copied = [entry_from_row(r) for r in rows]
            fork_id = new_session_id()
            while conn.execute("SELECT 1 FROM sessions WHERE id = ?", (fork_id,)).fetchone():
                fork_id = new_session_id()
            info = SessionInfo(
                id=fork_id,
                workspace=origin.workspace,
                created=time.time(),
                title=origin.title,
                forked_from=session_id,
                fork_entry=copied[-1].id if copied else None,
                meta=origin.meta,
            )
            self._write_session(conn, info, copied)
            return session_from_row(self._session_row(conn, fork_id))

    def _write_session(self, conn: sqlite3.Connection, info: SessionInfo, entries: Iterable[Entry]) -> None:
        """Insert a session row and its entries as given (ids, parents, times) in the caller's transaction."""
        conn.execute(
            "INSERT INTO sessions (id, workspace, created, title, forked_from, fork_entry, meta, updated) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                info.id,
                info.workspace,
                info.created,
                info.title,
                info.forked_from,
                info.fork_entry,
                payload_json(dict(info.meta)),
                info.created,
            ),
        )
        added: list[tuple[int, Entry]] = []
        for seq, entry in enumerate(entries):
            if entry.type not in ENTRY_TYPES:
                raise StoreError(f"unknown entry type {entry.type!r} in session {info.id}")
            own = Entry(entry.id, info.id, entry.parent_id, entry.type, entry.time, dict(entry.payload))
            stored = store_payload(own.type, own.payload)
            self._insert(conn, own, seq, stored, fts_text(own.type, own.payload) if self._indexing else "")
            added.append((seq, own))
        self._add_to_session(conn, info.id, added)

    def import_session(self, info: SessionInfo, entries: Iterable[Entry]) -> SessionInfo:
        """Write a whole session as given (ids, parents, times, header fields): ``crab sessions migrate``.

        Raises ``StoreError`` when a session with that id already exists here.
        """
        with self._transaction() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (info.id,)).fetchone():
                raise StoreError(f"session {info.id} already exists in the SQLite store at {self.path}")
            self._write_session(conn, info, entries)
            return session_from_row(self._session_row(conn, info.id))
