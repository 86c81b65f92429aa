"""The store contract suite run against the JSONL tape store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from crab import Store
from crab.testing import StoreContract
from crab_tape_jsonl import TapeStore


class TestTapeStoreContract(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        store = TapeStore(tmp_path / "sessions")
        asyncio.run(store.open())
        yield store
        asyncio.run(store.close())

    def reopen(self, store: Store) -> Store | None:
        assert isinstance(store, TapeStore)
        return TapeStore(store.root)
