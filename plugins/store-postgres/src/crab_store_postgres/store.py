"""``PostgresStore``: crab's ``Store`` contract on PostgreSQL, shared by any number of crab processes.

Appends to one session are serialised by a row lock: each append is one transaction that starts
with ``SELECT … FROM sessions WHERE id = … FOR UPDATE``, so a second worker's append waits for
the first to commit and then reads the new last entry as its parent (the lock, the insert and
the session's summary are one SQL statement: one round trip per append). That lock is an exact
per-session lock (an advisory lock would need a hash of the id, with collisions between
sessions) and it needs no retry loop (a serialisable transaction would fail with a
serialisation error under exactly the load it is for, and every caller would have to retry).
It is released at commit or rollback, and by the server when a worker's connection drops: a
worker killed mid-turn leaves every entry it committed and nothing half-written, and the next
worker's append continues the chain.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from crab import StoreError
from crab.secrets import REDACTED, dsn_password
from crab.storage import ENTRY_TYPES, Entry, EntryType, SearchHit, SessionInfo, new_entry_id, new_session_id, search_hit
from crab_sql_kit import (
    SESSION_COLUMNS,
    entry_from_row,
    entry_usage,
    payload_json,
    session_from_row,
    session_totals,
    store_payload,
)

from crab_store_postgres import logs
from crab_store_postgres.dsn import redact_dsn, server_name
from crab_store_postgres.loop import LoopThread
from crab_store_postgres.rows import encodable, search_query, search_words
from crab_store_postgres.schema import migrate

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

T = TypeVar("T")

_ENTRY_COLUMNS = "e.session_id, e.id, e.parent_id, e.type, e.time, e.payload, p.text"
_ENTRY_FROM = "entries e LEFT JOIN system_prompts p ON p.sha256 = e.system_prompt"
_SCAN_BATCH = 200

# One statement: lock the session's row, insert the entry after its last one, fold it into the
# session's summary. The entry's time never goes before the last entry's, even when the
# workers' clocks differ.
_APPEND = """
WITH s AS (
    SELECT id, entry_count, last_entry, updated FROM sessions WHERE id = %(sid)s FOR UPDATE
), e AS (
    INSERT INTO entries (session_id, seq, id, parent_id, type, time, payload, system_prompt, search, search_complete)
    SELECT s.id, s.entry_count, %(id)s, s.last_entry, %(type)s,
           CASE WHEN s.last_entry IS NULL THEN %(now)s ELSE greatest(%(now)s, s.updated) END,
           %(payload)s, %(prompt)s, array_to_tsvector(%(words)s::text[]), %(complete)s
    FROM s
    RETURNING seq, parent_id, time
)
UPDATE sessions SET
    entry_count = e.seq + 1, last_entry = %(id)s, updated = e.time,
    handoff_seq = CASE WHEN %(handoff)s THEN e.seq ELSE sessions.handoff_seq END,
    usage_count = usage_count + %(counted)s,
    input_tokens = input_tokens + %(input)s, output_tokens = output_tokens + %(output)s,
    cache_read_tokens = cache_read_tokens + %(cache_read)s,
    cache_write_tokens = cache_write_tokens + %(cache_write)s,
    reasoning_tokens = reasoning_tokens + %(reasoning)s,
    cost = CASE WHEN %(has_cost)s THEN COALESCE(cost, 0) + %(cost)s ELSE cost END
FROM e WHERE sessions.id = %(sid)s
RETURNING e.parent_id, e.time
"""


def _is_handoff(type: str, payload: Mapping[str, Any]) -> bool:
    return type == "anchor" and payload.get("kind") == "handoff"


def _text(value: str, what: str) -> str:
    if not encodable(value):
        raise StoreError(f"store-postgres: the {what} holds a character PostgreSQL cannot store (NUL or invalid UTF-8)")
    return value


class PostgresStore:
    """Sessions and entries in one PostgreSQL schema; see the plugin's README for the tables.

    ``setting`` names where the DSN came from (shown when the server cannot be reached).
    """

    name = "postgres"
    by_name_only = True
    """Installed beside another store, it is not the default: it needs a server, so it is named."""

    def __init__(
        self,
        dsn: str | None,
        *,
        schema: str = "crab",
        pool_size: int = 4,
        connect_timeout: float = 10.0,
        setting: str = "[plugins.store-postgres] dsn",
    ) -> None:
        self.dsn = dsn
        self.schema = schema
        self.pool_size = pool_size
        self.connect_timeout = connect_timeout
        self.setting = setting
        self._loop: LoopThread | None = None
        self._pool: AsyncConnectionPool[Any] | None = None

    def __repr__(self) -> str:
        return f"PostgresStore({redact_dsn(self.dsn or '')!r}, schema={self.schema!r})"

    # --- errors -----------------------------------------------------------------------------

    def _redact(self, text: str) -> str:
        dsn = self.dsn or ""
        password = dsn_password(dsn) if dsn else None
        if dsn and dsn in text:
            text = text.replace(dsn, redact_dsn(dsn))
        if password and len(password) >= 4:  # shorter ones would mangle every message they occur in
            text = text.replace(password, REDACTED)
        return text

    def _where(self) -> str:
        return server_name(self.dsn or "")

    def _failure(self, exc: BaseException, doing: str) -> StoreError:
        """A psycopg error as one line: what failed, at which server, set where; no password."""
        from psycopg_pool import PoolTimeout

        if isinstance(exc, PoolTimeout):
            reason = f"no connection within {self.connect_timeout:g}s (is the server up?)"
        else:
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            reason = lines[0] if lines else type(exc).__name__
        return StoreError(self._redact(f"store-postgres: {doing} at {self._where()} (set by {self.setting}): {reason}"))

    async def _call(self, work: Coroutine[Any, Any, T], doing: str = "a query failed") -> T:
        import psycopg

        if self._loop is None or self._pool is None:
            work.close()
            raise StoreError("the PostgreSQL store is not open (await store.open() first)")
        try:
            return await self._loop.call(work)
        except psycopg.Error as exc:
            raise self._failure(exc, doing) from None
        except UnicodeEncodeError:
            raise StoreError("store-postgres: a text holds a character PostgreSQL cannot store") from None

    # --- connection -------------------------------------------------------------------------

    async def open(self) -> None:
        if self._pool is not None:
            return
        if not self.dsn:
            raise StoreError(f"store-postgres: no database to connect to: set {self.setting}")
        logs.watch(self, self._redact)  # psycopg's own records become crab lines, not raw stderr
        loop = LoopThread("crab-store-postgres")
        try:
            self._pool = await loop.call(self._open_pool())
        except BaseException as exc:
            loop.stop()
            logs.unwatch(self)
            import psycopg

            if isinstance(exc, psycopg.Error):
                raise self._failure(exc, "cannot connect to PostgreSQL") from None
            if isinstance(exc, TimeoutError):
                raise StoreError(
                    self._redact(
                        f"store-postgres: cannot connect to PostgreSQL at {self._where()} (set by {self.setting}): "
                        f"no answer within {self.connect_timeout:g}s"
                    )
                ) from None
            raise
        self._loop = loop

    async def _open_pool(self) -> AsyncConnectionPool[Any]:
        import asyncio

        import psycopg
        from psycopg import sql
        from psycopg_pool import AsyncConnectionPool

        assert self.dsn is not None
        timeout = max(1, round(self.connect_timeout))
        first = await asyncio.wait_for(
            psycopg.AsyncConnection.connect(self.dsn, connect_timeout=timeout), self.connect_timeout + 1
        )
        try:
            await migrate(first, self.schema)
        finally:
            await first.close()
        search_path = sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema))

        async def configure(conn: AsyncConnection[Any]) -> None:
            await conn.execute(search_path)
            await conn.commit()

        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self.dsn,
            min_size=1,
            max_size=self.pool_size,
            # Autocommit: a one-statement append or read is its own transaction (no BEGIN/COMMIT
            # round trips); work of several statements opens one with ``conn.transaction()``.
            kwargs={"connect_timeout": timeout, "autocommit": True},
            configure=configure,
            timeout=self.connect_timeout,
            name="crab-store-postgres",
            open=False,
        )
        try:
            await pool.open(wait=True, timeout=self.connect_timeout)
        except BaseException:
            await pool.close()
            raise
        return pool

    async def close(self) -> None:
        pool, loop = self._pool, self._loop
        self._pool = self._loop = None
        if loop is None:
            return
        try:
            if pool is not None:
                await loop.call(pool.close())
        finally:
            loop.stop()
            logs.unwatch(self)

    @property
    def pool(self) -> AsyncConnectionPool[Any]:
        if self._pool is None:
            raise StoreError("the PostgreSQL store is not open (await store.open() first)")
        return self._pool

    async def _session_row(self, conn: AsyncConnection[Any], session_id: str, lock: str = "") -> tuple[Any, ...]:
        cur = await conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = %s {lock}", (session_id,))
        row = await cur.fetchone()
        if row is None:
            raise StoreError(f"no session {session_id!r} in the PostgreSQL store at {self._where()}")
        return tuple(row)

    # --- Store ------------------------------------------------------------------------------

    async def create_session(
        self, workspace: str, *, title: str | None = None, meta: Mapping[str, Any] | None = None
    ) -> SessionInfo:
        _text(workspace, "workspace")
        if title is not None:
            _text(title, "title")
        return await self._call(self._create(workspace, title, payload_json(dict(meta or {}))))

    async def _create(self, workspace: str, title: str | None, meta: str) -> SessionInfo:
        now = time.time()
        async with self.pool.connection() as conn, conn.transaction():
            while True:
                cur = await conn.execute(
                    "INSERT INTO sessions (id, workspace, created, title, meta, updated) "
                    f"VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING {SESSION_COLUMNS}",
                    (new_session_id(), workspace, now, title, meta, now),
                )
                row = await cur.fetchone()
                if row is not None:
                    return session_from_row(tuple(row))

    async def get_session(self, session_id: str) -> SessionInfo:
        return await self._call(self._get(session_id))

    async def _get(self, session_id: str) -> SessionInfo:
        async with self.pool.connection() as conn:
            return session_from_row(await self._session_row(conn, session_id))

    async def list_sessions(self, workspace: str | None = None, limit: int = 50) -> list[SessionInfo]:
        return await self._call(self._list(workspace, limit))

    async def put_blob(self, data: bytes) -> str:
        """Keep ``data`` once in the ``blobs`` table (``crab.storage.BlobStore``); returns its sha256."""
        import hashlib

        digest = hashlib.sha256(data).hexdigest()
        await self._call(self._put_blob(digest, bytes(data)), "storing an image failed")
        return digest

    async def _put_blob(self, digest: str, data: bytes) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                "INSERT INTO blobs (sha256, data) VALUES (%s, %s) ON CONFLICT (sha256) DO NOTHING", (digest, data)
            )

    async def get_blob(self, sha256: str) -> bytes | None:
        return await self._call(self._get_blob(sha256), "reading an image failed")

    async def _get_blob(self, sha256: str) -> bytes | None:
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT data FROM blobs WHERE sha256 = %s", (sha256,))
            row = await cur.fetchone()
        return None if row is None else bytes(row[0])

    async def _list(self, workspace: str | None, limit: int) -> list[SessionInfo]:
        async with self.pool.connection() as conn:
            if workspace is None:
                cur = await conn.execute(
                    f"SELECT {SESSION_COLUMNS} FROM sessions ORDER BY updated DESC, id DESC LIMIT %s", (limit,)
                )
            else:
                cur = await conn.execute(
                    f"SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace = %s "
                    "ORDER BY updated DESC, id DESC LIMIT %s",
                    (workspace, limit),
                )
            return [session_from_row(tuple(row)) for row in await cur.fetchall()]

    async def append(self, session_id: str, type: EntryType, payload: Mapping[str, Any]) -> Entry:
        if type not in ENTRY_TYPES:
            raise StoreError(f"unknown entry type {type!r}")
        return await self._call(self._append(session_id, type, dict(payload)))

    async def _append(self, session_id: str, type: EntryType, payload: dict[str, Any]) -> Entry:
        stored = store_payload(type, payload, storable=encodable)
        async with self.pool.connection() as conn:
            if stored.prompt_sha is None:
                return await self.append_in(conn, session_id, type, payload)  # one statement, one round trip
            async with conn.transaction():
                await conn.execute(
                    "INSERT INTO system_prompts (sha256, text) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    (stored.prompt_sha, stored.prompt_text),
                )
                return await self.append_in(conn, session_id, type, payload)

    async def append_in(
        self, conn: AsyncConnection[Any], session_id: str, type: EntryType, payload: dict[str, Any]
    ) -> Entry:
        """Append with one statement on ``conn`` (its own transaction in autocommit, else the caller's).

        The statement locks the session's row first (``FOR UPDATE``): that is the per-session
        lock, held until the transaction ends or the server sees the connection go.
        """
        stored = store_payload(type, payload, storable=encodable)
        words, complete = search_words(type, payload)
        usage = entry_usage(type, payload)
        entry_id = new_entry_id()
        cur = await conn.execute(
            _APPEND,
            {
                "sid": session_id,
                "id": entry_id,
                "type": type,
                "now": time.time(),
                "payload": stored.json,
                "prompt": stored.prompt_sha,
                "words": words,
                "complete": complete,
                "handoff": _is_handoff(type, payload),
                "counted": int(usage is not None),
                "input": usage.input_tokens if usage else 0,
                "output": usage.output_tokens if usage else 0,
                "cache_read": usage.cache_read_tokens if usage else 0,
                "cache_write": usage.cache_write_tokens if usage else 0,
                "reasoning": usage.reasoning_tokens if usage else 0,
                "has_cost": usage is not None and usage.cost is not None,
                "cost": (usage.cost if usage else None) or 0.0,
            },
        )
        row = await cur.fetchone()
        if row is None:
            raise StoreError(f"no session {session_id!r} in the PostgreSQL store at {self._where()}")
        parent, at = row
        return Entry(entry_id, session_id, parent, type, at, payload)

    @staticmethod
    async def _insert(conn: AsyncConnection[Any], added: list[tuple[int, Entry]]) -> None:
        prompts: dict[str, str] = {}
        rows = []
        for seq, entry in added:
            stored = store_payload(entry.type, entry.payload, storable=encodable)
            if stored.prompt_sha is not None and stored.prompt_text is not None:
                prompts[stored.prompt_sha] = stored.prompt_text
            words, complete = search_words(entry.type, entry.payload)
            rows.append(
                (
                    entry.session_id,
                    seq,
                    _text(entry.id, "entry id"),
                    entry.parent_id,
                    entry.type,
                    entry.time,
                    stored.json,
                    stored.prompt_sha,
                    words,
                    complete,
                )
            )
        async with conn.cursor() as cur:
            if prompts:
                await cur.executemany(
                    "INSERT INTO system_prompts (sha256, text) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    list(prompts.items()),
                )
            await cur.executemany(
                "INSERT INTO entries (session_id, seq, id, parent_id, type, time, payload, system_prompt, "
                "search, search_complete) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, array_to_tsvector(%s::text[]), %s)",
                rows,
            )

    @staticmethod
    async def _add_to_session(conn: AsyncConnection[Any], session_id: str, added: list[tuple[int, Entry]]) -> None:
        """Fold newly stored entries (with their positions) into the session's summary columns."""
        totals = session_totals(added)
        if totals is not None:
            await conn.execute(*totals.update(session_id, "%s"))

    async def entries(self, session_id: str, *, since_handoff: bool = False) -> list[Entry]:
        return await self._call(self._entries(session_id, since_handoff))

    async def _entries(self, session_id: str, since_handoff: bool) -> list[Entry]:
        # One statement, so the handoff position and the rows come from the same snapshot.
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM sessions s "
                "LEFT JOIN entries e ON e.session_id = s.id AND e.seq >= CASE WHEN %s THEN s.handoff_seq ELSE 0 END "
                "LEFT JOIN system_prompts p ON p.sha256 = e.system_prompt "
                "WHERE s.id = %s ORDER BY e.seq",
                (since_handoff, session_id),
            )
            rows = await cur.fetchall()
        if not rows:
            raise StoreError(f"no session {session_id!r} in the PostgreSQL store at {self._where()}")
        return [entry_from_row(tuple(r)) for r in rows if r[1] is not None]

    async def search(
        self, query: str, *, session_id: str | None = None, workspace: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        words = [w.lower() for w in query.split() if w]
        if not words or limit <= 0:
            return []
        return await self._call(self._search(words, session_id, workspace, limit), "search failed")

    async def _search(
        self, words: list[str], session_id: str | None, workspace: str | None, limit: int
    ) -> list[SearchHit]:
        where: list[str] = []
        params: list[Any] = []
        match = search_query(words)
        if match is not None:
            where.append("(e.search @@ %s::tsquery OR NOT e.search_complete)")
            params.append(match)
        if session_id is not None:
            where.append("e.session_id = %s")
            params.append(session_id)
        if workspace is not None:
            where.append("e.session_id IN (SELECT id FROM sessions WHERE workspace = %s)")
            params.append(workspace)
        sql = f"SELECT {_ENTRY_COLUMNS} FROM {_ENTRY_FROM}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY e.time DESC, e.rid DESC"
        hits: list[SearchHit] = []
        # A server-side cursor: candidates are read in batches until ``limit`` of them really match.
        async with self.pool.connection() as conn, conn.transaction(), conn.cursor(name="crab_search") as cur:
            await cur.execute(sql.encode("utf-8"), params)
            while len(hits) < limit:
                rows = await cur.fetchmany(_SCAN_BATCH)
                if not rows:
                    break
                for row in rows:
                    hit = search_hit(entry_from_row(tuple(row)), words)
                    if hit is not None:
                        hits.append(hit)
                        if len(hits) >= limit:
                            break
        return hits

    async def fork(self, session_id: str, at_entry: str | None = None) -> SessionInfo:
        return await self._call(self._fork(session_id, at_entry))

    async def _fork(self, session_id: str, at_entry: str | None) -> SessionInfo:
        async with self.pool.connection() as conn, conn.transaction():
            # FOR SHARE: no append to the source lands between choosing the cut and copying.
            origin = session_from_row(await self._session_row(conn, session_id, "FOR SHARE"))
            if at_entry is None:
                cut = origin.entry_count or 0
            else:
                cur = await conn.execute(
                    "SELECT MIN(seq) FROM entries WHERE session_id = %s AND id = %s", (session_id, at_entry)
                )
                found = await cur.fetchone()
                if found is None or found[0] is None:
                    raise StoreError(f"no entry {at_entry!r} in session {session_id}")
                cut = int(found[0]) + 1
            cur = await conn.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM {_ENTRY_FROM} WHERE e.session_id = %s AND e.seq < %s ORDER BY e.seq",
                (session_id, cut),
            )
            copied = [entry_from_row(tuple(r)) for r in await cur.fetchall()]
            info = SessionInfo(
                id=new_session_id(),
                workspace=origin.workspace,
                created=time.time(),
                title=origin.title,
                forked_from=session_id,
                fork_entry=copied[-1].id if copied else None,
                meta=origin.meta,
            )
            while not await self._write_session(conn, info, copied):
                info = replace(info, id=new_session_id())
            return session_from_row(await self._session_row(conn, info.id))

    async def _write_session(self, conn: AsyncConnection[Any], info: SessionInfo, entries: Iterable[Entry]) -> bool:
        """Insert a session row and its entries as given; False (nothing written) when the id is taken."""
        cur = await conn.execute(
            "INSERT INTO sessions (id, workspace, created, title, forked_from, fork_entry, meta, updated) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING id",
            (
                _text(info.id, "session id"),
                _text(info.workspace, "workspace"),
                info.created,
                info.title if info.title is None else _text(info.title, "title"),
                info.forked_from,
                info.fork_entry,
                payload_json(dict(info.meta)),
                info.created,
            ),
        )
        if await cur.fetchone() is None:
            return False
        added: list[tuple[int, Entry]] = []
        for seq, entry in enumerate(entries):
            if entry.type not in ENTRY_TYPES:
                raise StoreError(f"unknown entry type {entry.type!r} in session {info.id}")
            added.append((seq, Entry(entry.id, info.id, entry.parent_id, entry.type, entry.time, dict(entry.payload))))
        await self._insert(conn, added)
        await self._add_to_session(conn, info.id, added)
        return True

    async def import_session(self, info: SessionInfo, entries: Iterable[Entry]) -> SessionInfo:
        """Write a whole session as given (ids, parents, times, header fields): ``crab sessions migrate``.

        Raises ``StoreError`` when a session with that id already exists here.
        """
        return await self._call(self._import(info, list(entries)))

    async def _import(self, info: SessionInfo, entries: list[Entry]) -> SessionInfo:
        async with self.pool.connection() as conn, conn.transaction():
            if not await self._write_session(conn, info, entries):
                raise StoreError(f"session {info.id} already exists in the PostgreSQL store at {self._where()}")
            return session_from_row(await self._session_row(conn, info.id))
