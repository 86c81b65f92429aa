"""The database itself: WAL and busy timeout, numbered migrations, system prompts kept once, usage totals."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from crab import StoreError
from crab.messages import Usage
from crab.testing import load_config
from crab_store_sqlite import SqliteStore, crab_stores
from crab_store_sqlite.schema import MIGRATIONS


def opened(path: Path, **options: object) -> SqliteStore:
    store = SqliteStore(path, **options)  # type: ignore[arg-type]
    asyncio.run(store.open())
    return store


def test_wal_busy_timeout_and_migrations(tmp_path: Path) -> None:
    store = opened(tmp_path / "crab.db", busy_timeout=3.5)
    conn = store.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 3500
    rows = conn.execute("SELECT version, name FROM migrations ORDER BY version").fetchall()
    assert [v for v, _ in rows] == [m.version for m in MIGRATIONS]
    asyncio.run(store.close())
    again = opened(tmp_path / "crab.db")
    assert again.conn.execute("SELECT COUNT(*) FROM migrations").fetchone()[0] == len(MIGRATIONS)
    asyncio.run(again.close())


def test_a_database_from_a_newer_crab_is_refused(tmp_path: Path) -> None:
    asyncio.run(opened(tmp_path / "crab.db").close())
    with sqlite3.connect(tmp_path / "crab.db") as conn:
        conn.execute("INSERT INTO migrations VALUES (99, 'future', 0)")
    with pytest.raises(StoreError, match="newer"):
        opened(tmp_path / "crab.db")


def test_each_distinct_system_prompt_is_stored_once(tmp_path: Path) -> None:
    store = opened(tmp_path / "crab.db")
    prompt = "You are crab.\n" * 1000

    async def go() -> list[str]:
        ids = []
        for _ in range(3):
            info = await store.create_session("/w")
            ids.append(info.id)
            for text in (prompt, "other prompt", prompt):
                await store.append(info.id, "event", {"kind": "system_prompt", "sha256": "given", "text": text})
        return ids

    ids = asyncio.run(go())
    conn = store.conn
    assert conn.execute("SELECT COUNT(*) FROM system_prompts").fetchone()[0] == 2
    stored = conn.execute("SELECT payload FROM entries WHERE system_prompt IS NOT NULL").fetchall()
    assert len(stored) == 9
    assert all(len(p) < 100 and '"text":null' in p for (p,) in stored)
    for session_id in ids:
        payloads = [dict(e.payload) for e in asyncio.run(store.entries(session_id))]
        assert [p["text"] for p in payloads] == [prompt, "other prompt", prompt]
        assert list(payloads[0]) == ["kind", "sha256", "text"]
    asyncio.run(store.close())


def test_usage_totals_sum_assistant_messages(tmp_path: Path) -> None:
    store = opened(tmp_path / "crab.db")

    async def go() -> tuple[str, str, str]:
        info = await store.create_session("/w")
        sid = info.id
        assert (await store.get_session(sid)).usage is None
        await store.append(sid, "message", {"v": 1, "role": "user", "content": "hi"})
        first = await store.append(
            sid,
            "message",
            {"v": 1, "role": "assistant", "content": "a", "usage": {"input_tokens": 100, "output_tokens": 10}},
        )
        # model_call events repeat the message's numbers and are not counted again.
        await store.append(sid, "event", {"kind": "model_call", "usage": {"input_tokens": 100, "output_tokens": 10}})
        await store.append(
            sid,
            "message",
            {
                "v": 1,
                "role": "assistant",
                "content": "b",
                "usage": {"input_tokens": 50, "output_tokens": 5, "cache_read_tokens": 40, "cost": 0.25},
            },
        )
        fork = await store.fork(sid, at_entry=first.id)
        return sid, fork.id, first.id

    sid, fork_id, _ = asyncio.run(go())
    assert asyncio.run(store.get_session(sid)).usage == Usage(
        input_tokens=150, output_tokens=15, cache_read_tokens=40, cost=0.25
    )
    assert asyncio.run(store.get_session(fork_id)).usage == Usage(input_tokens=100, output_tokens=10)
    listed = {i.id: i.usage for i in asyncio.run(store.list_sessions())}
    assert listed[sid] == Usage(input_tokens=150, output_tokens=15, cache_read_tokens=40, cost=0.25)
    asyncio.run(store.close())


def test_full_text_index_is_added_and_backfilled_when_fts5_arrives(tmp_path: Path) -> None:
    path = tmp_path / "crab.db"
    without = opened(path, fts=False)

    async def fill() -> str:
        info = await without.create_session("/w")
        await without.append(info.id, "message", {"v": 1, "role": "user", "content": "written without an index"})
        return info.id

    sid = asyncio.run(fill())
    assert [v for (v,) in without.conn.execute("SELECT version FROM migrations ORDER BY version")] == [1, 3]
    asyncio.run(without.close())

    store = opened(path)
    assert store.fts
    assert [v for (v,) in store.conn.execute("SELECT version FROM migrations ORDER BY version")] == [1, 2, 3]
    hits = asyncio.run(store.search("without index"))
    assert [h.session_id for h in hits] == [sid]
    asyncio.run(store.close())


def test_two_stores_opening_a_new_database_at_once_both_work(tmp_path: Path) -> None:
    path = tmp_path / "crab.db"
    first, second = SqliteStore(path), SqliteStore(path)

    async def go() -> None:
        await asyncio.gather(first.open(), second.open())
        info = await first.create_session("/w")
        await second.append(info.id, "message", {"v": 1, "role": "user", "content": "x"})
        assert len(await first.entries(info.id)) == 1
        await first.close()
        await second.close()

    asyncio.run(go())


def test_the_hook_reads_path_from_config_and_defaults_to_crab_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRAB_HOME", str(tmp_path / "home"))
    (store,) = crab_stores(load_config(cwd=tmp_path))
    assert isinstance(store, SqliteStore)
    assert store.name == "sqlite"
    assert store.path == tmp_path / "home" / "crab.db"
    config = load_config(cwd=tmp_path, overrides={"plugins.store-sqlite.path": str(tmp_path / "x.db")})
    (store,) = crab_stores(config)
    assert isinstance(store, SqliteStore)
    assert store.path == tmp_path / "x.db"
    assert not (tmp_path / "x.db").exists()  # building the store object touches nothing


def test_opening_an_up_to_date_database_does_not_wait_for_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "crab.db"
    asyncio.run(opened(path).close())
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        reader = opened(path, busy_timeout=0.05)
        assert asyncio.run(reader.list_sessions()) == []
        asyncio.run(reader.close())
    finally:
        writer.execute("ROLLBACK")
        writer.close()
