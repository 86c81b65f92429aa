"""Full-text search: FTS5 finds word prefixes, never chokes on query syntax, and agrees with the scan."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from crab_store_sqlite import SqliteStore
from crab_store_sqlite.rows import fts_query

TEXTS = [
    "Refactor the parser: tokenizer first",
    "café au lait, not cafe",
    'quoted "phrase" AND OR NOT (parens) near*',
    "snake_case_name and don't stop",
    "100% done — 日本語 テキスト",
    "the parser is done",
]


@pytest.fixture(params=[True, False], ids=["fts5", "scan"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "crab.db", fts=request.param)
    asyncio.run(store.open())
    assert store.fts is request.param

    async def fill() -> None:
        info = await store.create_session("/w")
        for text in TEXTS:
            await store.append(info.id, "message", {"v": 1, "role": "user", "content": text})

    asyncio.run(fill())
    yield store
    asyncio.run(store.close())


def found(store: SqliteStore, query: str) -> list[str]:
    return [h.excerpt for h in asyncio.run(store.search(query))]


def test_words_match_case_insensitively_newest_first(store: SqliteStore) -> None:
    assert found(store, "PARSER") == [TEXTS[5], TEXTS[0]]
    assert found(store, "parser done") == [TEXTS[5]]
    assert found(store, "parse") == [TEXTS[5], TEXTS[0]]  # a word prefix


def test_query_syntax_is_just_text(store: SqliteStore) -> None:
    for query in ('"phrase"', "AND OR", "(parens)", "near*", "NOT", '"', "*", "(", "100%"):
        assert isinstance(found(store, query), list)
    assert found(store, '"phrase" (parens)') == [TEXTS[2]]
    assert found(store, "100%") == [TEXTS[4]]
    assert found(store, "don't") == [TEXTS[3]]
    assert found(store, "snake_case_name") == [TEXTS[3]]


def test_accents_and_other_scripts(store: SqliteStore) -> None:
    assert found(store, "café") == [TEXTS[1]]
    assert found(store, "日本語") == [TEXTS[4]]


def test_fts_query_quotes_every_word() -> None:
    assert fts_query(["foo", "bar-baz"]) == '"foo"* AND "bar baz"*'
    assert fts_query(['"', "*"]) is None
