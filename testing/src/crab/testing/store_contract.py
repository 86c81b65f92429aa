"""``StoreContract``: the pytest suite every ``crab.Store`` must pass, one test per guarantee.

Subclass it in a test module and give it a ``store`` fixture that yields an *opened* store and
closes it afterwards; override ``reopen`` when the store keeps data across instances::

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path: Path) -> Iterator[Store]:
            store = MyStore(tmp_path / "data")
            asyncio.run(store.open())
            yield store
            asyncio.run(store.close())

        def reopen(self, store: Store) -> Store | None:
            return MyStore(store.root)  # a new, unopened instance on the same data

Each test drives the store with ``asyncio.run``, one event loop per step, so a store must not
tie itself to the loop that opened it.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast

import pytest

from crab._contracts.errors import StoreError
from crab._contracts.images import sha256_hex
from crab._contracts.storage import ENTRY_TYPES, BlobStore, Entry, EntryType, SessionImporter, SessionInfo, Store

T = TypeVar("T")

WORKSPACE = "/work/contract-project"
OTHER_WORKSPACE = "/work/other project ü"


def run(step: Awaitable[T]) -> T:
    """Run one store call to completion."""

    async def wrapper() -> T:
        return await step

    return asyncio.run(wrapper())


def user(text: str) -> dict[str, Any]:
    return {"v": 1, "role": "user", "content": text}


def assistant(text: str, **extra: Any) -> dict[str, Any]:
    return {"v": 1, "role": "assistant", "content": text, "stop_reason": "end", **extra}


BLOB = bytes(range(256)) * 4 + b"\x89PNG\r\n\x1a\n sk-secret-looking-but-binary \x00\xff"
"""Every byte value, a PNG signature and text that looks like a key: a blob must come back as is."""


def image_message(text: str, data: bytes = BLOB) -> dict[str, Any]:
    """A user message payload naming one image by hash (as the loop stores it)."""
    image = {"media_type": "image/png", "sha256": sha256_hex(data), "size": len(data)}
    return {"v": 1, "role": "user", "content": text, "images": [image]}


def blobs_of(store: Store) -> BlobStore:
    """``store`` as a ``BlobStore``; the test is skipped for a store without that capability."""
    if not isinstance(store, BlobStore):
        pytest.skip(f"{type(store).__name__} keeps no blobs (images are inlined in its entries)")
    return store


def handoff(name: str, **state: Any) -> dict[str, Any]:
    return {"name": name, "kind": "handoff", "state": state}


def append_all(store: Store, session_id: str, items: list[tuple[EntryType, Mapping[str, Any]]]) -> list[Entry]:
    async def go() -> list[Entry]:
        return [await store.append(session_id, kind, payload) for kind, payload in items]

    return run(go())


def assert_chain(entries: list[Entry], first_parent: str | None = None) -> None:
    """Each entry's parent is the entry before it."""
    parent = first_parent
    for entry in entries:
        assert entry.parent_id == parent, f"entry {entry.id} has parent {entry.parent_id}, expected {parent}"
        parent = entry.id


def tick() -> None:
    """Let the clock move so ``updated`` and ``time`` order is unambiguous (not a timing check)."""
    time.sleep(0.02)


class StoreContract:
    """The ``Store`` guarantees as tests; see the module docstring for how to subclass it."""

    def reopen(self, store: Store) -> Store | None:
        """A new, not yet opened instance on the same data as ``store``; None if it has none."""
        return None

    def _reopened(self, store: Store) -> Store:
        other = self.reopen(store)
        if other is None:
            pytest.skip(f"{type(store).__name__} keeps nothing across instances (no reopen)")
        run(other.open())
        return other

    # --- sessions ---------------------------------------------------------------------------

    def test_is_a_store(self, store: Store) -> None:
        assert isinstance(store, Store)
        assert isinstance(store.name, str)
        assert store.name

    def test_create_and_get_session(self, store: Store) -> None:
        before = time.time()
        info = run(store.create_session(WORKSPACE, title="a title", meta={"model": "m", "n": [1, 2]}))
        assert info.id
        assert info.workspace == WORKSPACE
        assert info.title == "a title"
        assert dict(info.meta) == {"model": "m", "n": [1, 2]}
        assert before - 1 <= info.created <= time.time() + 1
        assert (info.forked_from, info.fork_entry) == (None, None)
        got = run(store.get_session(info.id))
        assert (got.id, got.workspace, got.title, got.created) == (info.id, WORKSPACE, "a title", info.created)
        assert dict(got.meta) == dict(info.meta)
        if got.entry_count is not None:
            assert got.entry_count == 0

    def test_session_ids_are_unique(self, store: Store) -> None:
        ids = {run(store.create_session(WORKSPACE)).id for _ in range(20)}
        assert len(ids) == 20

    def test_get_session_counts_entries_and_tracks_updated(self, store: Store) -> None:
        info = run(store.create_session(WORKSPACE))
        entries = append_all(store, info.id, [("message", user("one")), ("message", assistant("two"))])
        got = run(store.get_session(info.id))
        if got.entry_count is not None:
            assert got.entry_count == 2
        if got.updated is not None:
            assert got.updated == entries[-1].time

    def test_list_sessions_most_recently_updated_first(self, store: Store) -> None:
        first = run(store.create_session(WORKSPACE))
        tick()
        second = run(store.create_session(WORKSPACE))
        tick()
        third = run(store.create_session(OTHER_WORKSPACE))
        tick()
        run(store.append(first.id, "message", user("bump")))
        listed = [i.id for i in run(store.list_sessions())]
        assert listed[:3] == [first.id, third.id, second.id]
        assert [i.id for i in run(store.list_sessions(WORKSPACE))] == [first.id, second.id]
        assert [i.id for i in run(store.list_sessions(OTHER_WORKSPACE))] == [third.id]
        assert [i.id for i in run(store.list_sessions(limit=1))] == [first.id]
        assert run(store.list_sessions("/no/such/workspace")) == []

    def test_list_sessions_gives_each_sessions_meta(self, store: Store) -> None:
        # ``crab serve`` finds a chat's session by its meta (crab._assembly.channel_host), also after a restart
        keyed = run(store.create_session(WORKSPACE, meta={"crab.channel": "telegram", "crab.address": "42"}))
        run(store.create_session(WORKSPACE, meta={"crab.channel": "telegram", "crab.address": "43"}))
        run(store.append(keyed.id, "message", user("hi")))
        listed = {i.id: dict(i.meta) for i in run(store.list_sessions(WORKSPACE))}
        assert listed[keyed.id] == {"crab.channel": "telegram", "crab.address": "42"}
        other = self.reopen(store)
        if other is None:
            return  # a store that keeps nothing across instances
        run(other.open())
        try:
            again = {i.id: dict(i.meta) for i in run(other.list_sessions(WORKSPACE))}
            assert again[keyed.id] == {"crab.channel": "telegram", "crab.address": "42"}
        finally:
            run(other.close())

    def test_unknown_session_raises_store_error(self, store: Store) -> None:
        steps: list[Callable[[], Awaitable[object]]] = [
            lambda: store.get_session("20000101T000000-000000"),
            lambda: store.entries("20000101T000000-000000"),
            lambda: store.entries("20000101T000000-000000", since_handoff=True),
            lambda: store.append("20000101T000000-000000", "message", user("x")),
            lambda: store.fork("20000101T000000-000000"),
            lambda: store.get_session("../../etc/passwd"),
        ]
        for step in steps:
            with pytest.raises(StoreError):
                run(step())

    # --- append and entries -----------------------------------------------------------------

    def test_append_returns_entries_with_ids_and_parent_chain(self, store: Store) -> None:
        info = run(store.create_session(WORKSPACE))
        entries = append_all(
            store,
            info.id,
            [("message", user("hi")), ("message", assistant("hello")), ("event", {"kind": "model_call"})],
        )
        assert len({e.id for e in entries}) == 3
        assert all(e.session_id == info.id for e in entries)
        assert [e.type for e in entries] == ["message", "message", "event"]
        assert_chain(entries)
        assert entries[0].time <= entries[1].time <= entries[2].time

    def test_entries_come_back_in_append_order_exactly(self, store: Store) -> None:
        info = run(store.create_session(WORKSPACE))
        items: list[tuple[EntryType, Mapping[str, Any]]] = [("message", user(f"m{i}")) for i in range(30)]
        appended = append_all(store, info.id, items)
        assert run(store.entries(info.id)) == appended

    def test_unknown_entry_type_raises(self, store: Store) -> None:
        info = run(store.create_session(WORKSPACE))
        with pytest.raises(StoreError):
            run(store.append(info.id, cast(EntryType, "bogus"), {"x": 1}))
        assert run(store.entries(info.id)) == []

    def test_every_entry_type_round_trips_its_payload(self, store: Store) -> None:
        payloads: dict[EntryType, dict[str, Any]] = {
            "message": assistant(
                'héllo wörld — 你好 🦀 \u0000 tab\t "quotes" \\ back',
                tool_calls=[{"id": "c1", "name": "read", "arguments": {"path": "/tmp/ü.txt", "n": [1, 2.5, None]}}],
                usage={"input_tokens": 10, "output_tokens": 3, "cost": 0.0012},
            ),
            "tool_result": {"v": 1, "role": "tool", "call_id": "c1", "name": "read", "content": "x" * 1_000_000},
            "anchor": {"name": "phase 2", "kind": "mark", "state": {"nested": {"deep": {"list": [True, False, None]}}}},
            "event": {"kind": "model_call", "model": "m", "usage": {"input_tokens": 1, "output_tokens": 2}},
            "custom": {
                "plugin": "x",
                "emoji": "🦀" * 100,
                "lone surrogate": "bad \udce9 byte",
                "numbers": [0, -1, 1.5e300, 2**53],
                "empty": {},
            },
        }
        assert set(payloads) == set(ENTRY_TYPES)
        info = run(store.create_session(WORKSPACE))
        for kind, payload in payloads.items():
            entry = run(store.append(info.id, kind, payload))
            assert dict(entry.payload) == payload
        stored = run(store.entries(info.id))
        assert [(e.type, dict(e.payload)) for e in stored] == list(payloads.items())

    def test_system_prompt_events_round_trip(self, store: Store) -> None:
        prompt = "You are crab. " * 500
        info = run(store.create_session(WORKSPACE))
        other = run(store.create_session(WORKSPACE))
        payload = {"kind": "system_prompt", "sha256": "abc", "text": prompt}
        for sid in (info.id, other.id, info.id):
            run(store.append(sid, "event", payload))
        run(store.append(info.id, "event", {"kind": "system_prompt", "sha256": "def", "text": "short"}))
        texts = [e.payload["text"] for e in run(store.entries(info.id))]
        assert texts == [prompt, prompt, "short"]
        assert [dict(e.payload) for e in run(store.entries(other.id))] == [payload]

    def test_appends_do_not_keep_a_reference_to_the_callers_dict(self, store: Store) -> None:
        info = run(store.create_session(WORKSPACE))
        payload = user("before")
        run(store.append(info.id, "message", payload))
        payload["content"] = "after"
        assert run(store.entries(info.id))[0].payload["content"] == "before"

    # --- handoff ----------------------------------------------------------------------------

    def test_since_handoff_without_a_handoff_is_everything(self, store: Store) -> None:
        info = run(store.create_session(WORKSPACE))
        appended = append_all(
            store, info.id, [("message", user("a")), ("anchor", {"name": "m", "kind": "mark", "state": {}})]
        )
        assert run(store.entries(info.id, since_handoff=True)) == appended
        empty = run(store.create_session(WORKSPACE))
        assert run(store.entries(empty.id, since_handoff=True)) == []

    def test_since_handoff_starts_at_the_last_handoff_inclusive(self, store: Store) -> None:
        info = run(store.create_session(WORKSPACE))
        appended = append_all(
            store,
            info.id,
            [
                ("message", user("old")),
                ("anchor", handoff("first", summary="s1")),
                ("message", user("middle")),
                ("anchor", handoff("second", summary="s2")),
                ("message", user("new")),
                ("anchor", {"name": "bookmark", "kind": "mark", "state": {}}),
                ("message", {"v": 1, "role": "user", "content": "mentions handoff but is not one"}),
            ],
        )
        recent = run(store.entries(info.id, since_handoff=True))
        assert recent == appended[3:]
        assert recent[0].payload["name"] == "second"
        assert run(store.entries(info.id)) == appended

    def test_a_handoff_as_the_last_entry(self, store: Store) -> None:
        info = run(store.create_session(WORKSPACE))
        appended = append_all(store, info.id, [("message", user("a")), ("anchor", handoff("h"))])
        assert run(store.entries(info.id, since_handoff=True)) == appended[1:]

    def test_a_compaction_anchor_round_trips_and_starts_the_context(self, store: Store) -> None:
        """A compaction (``crab/_loop/compaction.py``) is a handoff anchor whose payload also holds
        the verbatim tail it kept, tool calls and results included; a store keeps it whole."""
        kept = [
            user("the question"),
            assistant("", stop_reason="tool_use", tool_calls=[{"id": "c1", "name": "read", "arguments": {"p": "ü"}}]),
            {"v": 1, "role": "tool", "call_id": "c1", "name": "read", "content": "line\n\tindented", "is_error": True},
        ]
        compaction = {
            "name": "compaction",
            "kind": "handoff",
            "state": {"summary": "Goal: fix the parser. Progress: read parser.py."},
            "compaction": {
                "reason": "threshold",
                "summarised": 40,
                "kept": kept,
                "tools": ["read"],
                "tokens_before": 9000,
            },
        }
        info = run(store.create_session(WORKSPACE))
        appended = append_all(
            store,
            info.id,
            [*[("message", m) for m in kept], ("anchor", compaction), ("message", user("after"))],
        )
        recent = run(store.entries(info.id, since_handoff=True))
        assert recent == appended[3:]
        assert recent[0].payload == compaction
        assert run(store.entries(info.id)) == appended
        reopened = self.reopen(store)
        if reopened is not None:
            run(reopened.open())
            try:
                assert run(reopened.entries(info.id, since_handoff=True)) == appended[3:]
            finally:
                run(reopened.close())

    # --- fork -------------------------------------------------------------------------------

    def _source(self, store: Store) -> tuple[SessionInfo, list[Entry]]:
        info = run(store.create_session(WORKSPACE, title="source", meta={"k": "v"}))
        appended = append_all(
            store,
            info.id,
            [
                ("message", user("one")),
                ("anchor", handoff("h1", summary="so far")),
                ("message", assistant("two")),
                ("message", user("three")),
                ("message", assistant("four")),
            ],
        )
        return info, appended

    def test_fork_at_an_entry(self, store: Store) -> None:
        source, appended = self._source(store)
        fork = run(store.fork(source.id, at_entry=appended[2].id))
        assert fork.id != source.id
        assert (fork.forked_from, fork.fork_entry) == (source.id, appended[2].id)
        assert fork.workspace == WORKSPACE
        got = run(store.get_session(fork.id))
        assert (got.forked_from, got.fork_entry) == (source.id, appended[2].id)
        copied = run(store.entries(fork.id))
        assert [(e.id, e.parent_id, e.type, e.time, dict(e.payload)) for e in copied] == [
            (e.id, e.parent_id, e.type, e.time, dict(e.payload)) for e in appended[:3]
        ]
        assert all(e.session_id == fork.id for e in copied)
        assert [e.id for e in run(store.entries(fork.id, since_handoff=True))] == [e.id for e in appended[1:3]]

    def test_fork_appends_continue_from_the_fork_entry_and_leave_the_source_alone(self, store: Store) -> None:
        source, appended = self._source(store)
        fork = run(store.fork(source.id, at_entry=appended[1].id))
        own = append_all(store, fork.id, [("message", user("fork only")), ("anchor", handoff("fork h"))])
        assert own[0].parent_id == appended[1].id
        assert_chain(run(store.entries(fork.id)))
        assert run(store.entries(source.id)) == appended
        more = run(store.append(source.id, "message", user("source only")))
        assert more.parent_id == appended[-1].id
        assert [e.id for e in run(store.entries(fork.id))] == [appended[0].id, appended[1].id, *(e.id for e in own)]
        assert run(store.entries(fork.id, since_handoff=True)) == own[1:]

    def test_fork_at_the_end(self, store: Store) -> None:
        source, appended = self._source(store)
        fork = run(store.fork(source.id))
        assert fork.fork_entry == appended[-1].id
        assert [(e.id, dict(e.payload)) for e in run(store.entries(fork.id))] == [
            (e.id, dict(e.payload)) for e in appended
        ]

    def test_fork_of_an_empty_session(self, store: Store) -> None:
        source = run(store.create_session(WORKSPACE))
        fork = run(store.fork(source.id))
        assert (fork.forked_from, fork.fork_entry) == (source.id, None)
        assert run(store.entries(fork.id)) == []
        assert run(store.append(fork.id, "message", user("x"))).parent_id is None

    def test_fork_of_a_fork(self, store: Store) -> None:
        source, appended = self._source(store)
        first = run(store.fork(source.id, at_entry=appended[3].id))
        second = run(store.fork(first.id, at_entry=appended[0].id))
        assert second.forked_from == first.id
        assert [e.id for e in run(store.entries(second.id))] == [appended[0].id]

    def test_fork_at_an_unknown_entry_raises(self, store: Store) -> None:
        source, _ = self._source(store)
        with pytest.raises(StoreError):
            run(store.fork(source.id, at_entry="000000000000"))

    # --- search -----------------------------------------------------------------------------

    def _corpus(self, store: Store) -> tuple[SessionInfo, SessionInfo, SessionInfo, dict[str, Entry]]:
        a = run(store.create_session(WORKSPACE))
        b = run(store.create_session(WORKSPACE))
        c = run(store.create_session(OTHER_WORKSPACE))
        named: dict[str, Entry] = {}
        corpus: list[tuple[str, str, EntryType, dict[str, Any]]] = [
            ("a1", a.id, "message", user("the quick brown fox jumps")),
            ("a2", a.id, "message", assistant("a lazy dog sleeps", tool_calls=[{"id": "t", "name": "grep_tool"}])),
            ("b1", b.id, "tool_result", {"v": 1, "role": "tool", "call_id": "t", "name": "r", "content": "Brown FOX"}),
            ("c1", c.id, "message", user("quick brown fox in the other workspace")),
            ("a3", a.id, "anchor", handoff("zebra phase", summary="striped animal")),
        ]
        for key, sid, kind, payload in corpus:
            tick()
            named[key] = run(store.append(sid, kind, payload))
        return a, b, c, named

    def test_search_needs_every_word_and_gives_newest_first(self, store: Store) -> None:
        _, _, c, named = self._corpus(store)
        hits = run(store.search("brown fox"))
        assert [h.entry_id for h in hits] == [named["c1"].id, named["b1"].id, named["a1"].id]
        top = hits[0]
        assert (top.session_id, top.type, top.time) == (c.id, "message", named["c1"].time)
        assert "brown" in top.excerpt.lower()
        assert [h.entry_id for h in run(store.search("quick fox"))] == [named["c1"].id, named["a1"].id]
        assert run(store.search("brown elephant")) == []

    def test_search_is_case_insensitive_and_covers_tools_and_anchors(self, store: Store) -> None:
        _, _, _, named = self._corpus(store)
        assert [h.entry_id for h in run(store.search("LAZY"))] == [named["a2"].id]
        assert [h.entry_id for h in run(store.search("grep_tool"))] == [named["a2"].id]
        assert [h.entry_id for h in run(store.search("zebra"))] == [named["a3"].id]
        assert [h.entry_id for h in run(store.search("striped"))] == [named["a3"].id]

    def test_search_scoped_by_session_and_workspace_with_a_limit(self, store: Store) -> None:
        a, b, _, named = self._corpus(store)
        assert [h.entry_id for h in run(store.search("brown fox", session_id=a.id))] == [named["a1"].id]
        assert [h.entry_id for h in run(store.search("fox", session_id=b.id))] == [named["b1"].id]
        in_ws = run(store.search("brown fox", workspace=WORKSPACE))
        assert [h.entry_id for h in in_ws] == [named["b1"].id, named["a1"].id]
        other = run(store.search("fox", workspace=OTHER_WORKSPACE))
        assert [h.entry_id for h in other] == [named["c1"].id]
        assert [h.entry_id for h in run(store.search("fox", limit=1))] == [named["c1"].id]

    def test_search_finds_forked_copies_in_the_fork(self, store: Store) -> None:
        a, _, _, named = self._corpus(store)
        fork = run(store.fork(a.id, at_entry=named["a1"].id))
        hits = run(store.search("jumps", session_id=fork.id))
        assert [(h.session_id, h.entry_id) for h in hits] == [(fork.id, named["a1"].id)]

    # --- durability -------------------------------------------------------------------------

    def test_a_new_instance_sees_everything(self, store: Store) -> None:
        source, appended = self._source(store)
        fork = run(store.fork(source.id, at_entry=appended[1].id))
        other = self._reopened(store)
        try:
            assert run(other.entries(source.id)) == appended
            assert run(other.entries(source.id, since_handoff=True)) == appended[1:]
            got = run(other.get_session(fork.id))
            assert (got.forked_from, got.fork_entry, got.workspace) == (source.id, appended[1].id, WORKSPACE)
            assert {source.id, fork.id} <= {i.id for i in run(other.list_sessions())}
            assert [h.entry_id for h in run(other.search("four"))] == [appended[4].id]
            later = run(other.append(source.id, "message", user("after reopen")))
            assert later.parent_id == appended[-1].id
        finally:
            run(other.close())
        assert run(store.entries(source.id))[-1] == later

    def test_two_instances_interleaving_appends_keep_one_chain(self, store: Store) -> None:
        info = run(store.create_session(WORKSPACE))
        other = self._reopened(store)
        try:
            mine: list[Entry] = []
            for i in range(20):
                writer = store if i % 3 else other
                mine.append(run(writer.append(info.id, "message", user(f"n{i}"))))
        finally:
            run(other.close())
        stored = run(store.entries(info.id))
        assert stored == mine
        assert_chain(stored)

    # --- optional capabilities ------------------------------------------------------------

    def test_import_session_writes_a_session_as_given(self, store: Store) -> None:
        """Only for stores with the ``SessionImporter`` capability (``crab sessions migrate``)."""
        if not isinstance(store, SessionImporter):
            pytest.skip(f"{type(store).__name__} has no import_session (an optional capability)")
        from crab._builtin.memory_store import MemoryStore

        source = MemoryStore()
        info = run(source.create_session(WORKSPACE, title="imported", meta={"k": "v"}))
        entries = append_all(
            source, info.id, [("message", user("one")), ("anchor", handoff("h")), ("message", assistant("two"))]
        )
        fork = run(source.fork(info.id, at_entry=entries[0].id))

        def import_session(header: SessionInfo, items: list[Entry]) -> None:
            result = store.import_session(header, items)
            if inspect.isawaitable(result):
                run(result)

        import_session(run(source.get_session(info.id)), entries)
        import_session(run(source.get_session(fork.id)), run(source.entries(fork.id)))
        assert run(store.entries(info.id)) == entries
        assert run(store.entries(info.id, since_handoff=True)) == entries[1:]
        got = run(store.get_session(info.id))
        assert (got.id, got.workspace, got.title, dict(got.meta), got.created) == (
            info.id,
            WORKSPACE,
            "imported",
            {"k": "v"},
            info.created,
        )
        forked = run(store.get_session(fork.id))
        assert (forked.forked_from, forked.fork_entry) == (info.id, entries[0].id)
        assert [e.id for e in run(store.entries(fork.id))] == [entries[0].id]
        with pytest.raises(StoreError):
            import_session(run(source.get_session(info.id)), entries)
        later = run(store.append(info.id, "message", user("after import")))
        assert later.parent_id == entries[-1].id

    # --- blobs (images) ---------------------------------------------------------------------

    def test_blob_round_trip_keeps_every_byte(self, store: Store) -> None:
        blobs = blobs_of(store)
        digest = run(blobs.put_blob(BLOB))
        assert digest == sha256_hex(BLOB)
        assert run(blobs.get_blob(digest)) == BLOB
        assert run(blobs.get_blob("0" * 64)) is None

    def test_blob_put_twice_is_kept_once(self, store: Store) -> None:
        blobs = blobs_of(store)
        assert run(blobs.put_blob(BLOB)) == run(blobs.put_blob(bytes(BLOB)))
        assert run(blobs.get_blob(sha256_hex(BLOB))) == BLOB
        other = b"GIF89a another image"
        assert run(blobs.get_blob(run(blobs.put_blob(other)))) == other

    def test_image_entries_round_trip_and_fork_keeps_their_blobs(self, store: Store) -> None:
        blobs = blobs_of(store)
        digest = run(blobs.put_blob(BLOB))
        info = run(store.create_session(WORKSPACE))
        appended = append_all(store, info.id, [("message", image_message("look")), ("message", assistant("seen"))])
        assert [dict(e.payload) for e in run(store.entries(info.id))] == [dict(e.payload) for e in appended]
        fork = run(store.fork(info.id, at_entry=appended[0].id))
        copied = run(store.entries(fork.id))
        assert copied[0].payload["images"][0]["sha256"] == digest
        assert run(blobs.get_blob(digest)) == BLOB

    def test_blobs_survive_a_new_instance(self, store: Store) -> None:
        digest = run(blobs_of(store).put_blob(BLOB))
        other = self._reopened(store)
        try:
            assert run(blobs_of(other).get_blob(digest)) == BLOB
        finally:
            run(other.close())
