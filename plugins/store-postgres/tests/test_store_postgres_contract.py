"""The store contract suite run against the PostgreSQL store, each test in a fresh schema."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from crab import Store
from crab.testing import StoreContract
from crab_store_postgres import PostgresStore


class TestPostgresStoreContract(StoreContract):
    @pytest.fixture
    def store(self, pg_dsn: str, pg_schema: str) -> Iterator[Store]:
        store = PostgresStore(pg_dsn, schema=pg_schema)
        asyncio.run(store.open())
        yield store
        asyncio.run(store.close())

    def reopen(self, store: Store) -> Store | None:
        assert isinstance(store, PostgresStore)
        return PostgresStore(store.dsn, schema=store.schema)
