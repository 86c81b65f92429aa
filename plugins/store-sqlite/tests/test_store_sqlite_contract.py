"""The store contract suite run against the SQLite store, with and without its FTS5 index."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from crab import Store
from crab.testing import StoreContract
from crab_store_sqlite import SqliteStore


class TestSqliteStoreContract(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        store = SqliteStore(tmp_path / "crab.db")
        asyncio.run(store.open())
        assert store.fts, "this Python's SQLite has no FTS5; the scan fallback is tested below"
        yield store
        asyncio.run(store.close())

    def reopen(self, store: Store) -> Store | None:
        assert isinstance(store, SqliteStore)
        return SqliteStore(store.path)


class TestSqliteStoreWithoutFullTextContract(StoreContract):
    """The scanning search used when SQLite lacks FTS5 keeps the same contract."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        store = SqliteStore(tmp_path / "crab.db", fts=False)
        asyncio.run(store.open())
        assert not store.fts
        yield store
        asyncio.run(store.close())

    def reopen(self, store: Store) -> Store | None:
        assert isinstance(store, SqliteStore)
        return SqliteStore(store.path, fts=False)


def test_a_session_id_that_is_not_utf8_is_no_session(tmp_path: Path) -> None:
    # `crab sessions show $'\xff'` hands the store the surrogate Python decodes that byte to.
    from crab import StoreError

    store = SqliteStore(tmp_path / "crab.db")
    asyncio.run(store.open())
    try:
        with pytest.raises(StoreError, match="no session"):
            asyncio.run(store.get_session("\udcff"))
    finally:
        asyncio.run(store.close())
