"""The store contract suite run against core's in-memory store, the reference implementation."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from crab._builtin.memory_store import MemoryStore
from crab._contracts.storage import Store
from crab.testing.store_contract import StoreContract


class TestMemoryStoreContract(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[Store]:
        store = MemoryStore()
        asyncio.run(store.open())
        yield store
        asyncio.run(store.close())
