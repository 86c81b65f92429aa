"""Where tapes live and what their lines look like: the header first, one readable entry per line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from crab import StoreError
from crab.testing import load_config
from crab_tape_jsonl import TapeStore, TornLineWarning, crab_stores
from crab_tape_jsonl.layout import check_session_id, workspace_folder


def test_workspace_folders_are_readable_safe_and_distinct() -> None:
    folder = workspace_folder("/home/ana/src/my app")
    assert folder.startswith("home-ana-src-my-app-")
    assert len(folder.rsplit("-", 1)[1]) == 8
    assert workspace_folder("/a/b") != workspace_folder("/a-b")
    for odd in ("/", "", "../..", "C:\\Users\\x", "/" + "x" * 300, "/tmp/ü/日本"):
        name = workspace_folder(odd)
        assert name
        assert "/" not in name
        assert "\\" not in name
        assert not name.startswith(".")
        assert len(name) <= 60


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "x" * 200, "a\nb"])
def test_session_ids_that_are_not_plain_file_names_are_refused(bad: str) -> None:
    with pytest.raises(StoreError):
        check_session_id(bad)


def test_one_file_per_session_with_the_header_first(tmp_path: Path) -> None:
    async def go() -> tuple[str, str]:
        store = TapeStore(tmp_path)
        await store.open()
        info = await store.create_session("/home/ana/app", title="t", meta={"k": 1})
        entry = await store.append(info.id, "message", {"v": 1, "role": "user", "content": "héllo 🦀"})
        return info.id, entry.id

    session_id, entry_id = asyncio.run(go())
    path = tmp_path / workspace_folder("/home/ana/app") / f"{session_id}.jsonl"
    text = path.read_text(encoding="utf-8")
    header, line = (json.loads(x) for x in text.splitlines())
    assert header["crab_session"] == 1
    assert (header["id"], header["workspace"], header["title"], header["meta"]) == (
        session_id,
        "/home/ana/app",
        "t",
        {"k": 1},
    )
    assert line["id"] == entry_id
    assert line["parent_id"] is None
    assert line["type"] == "message"
    assert "héllo 🦀" in text  # readable by hand, not \\u-escaped
    assert not list(path.parent.glob(".*.tmp"))


def test_the_hook_reads_root_from_config_and_defaults_to_crab_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRAB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (store,) = crab_stores(load_config(cwd=tmp_path))
    assert isinstance(store, TapeStore)
    assert store.name == "jsonl"
    assert store.root == tmp_path / "home" / "sessions"
    (store,) = crab_stores(load_config(cwd=tmp_path, overrides={"plugins.tape-jsonl.root": str(tmp_path / "t")}))
    assert isinstance(store, TapeStore)
    assert store.root == tmp_path / "t"


def test_a_file_that_is_not_a_tape_is_skipped_by_list_with_a_warning(tmp_path: Path) -> None:
    store = TapeStore(tmp_path)
    info = asyncio.run(store.create_session("/w"))
    stray = tmp_path / workspace_folder("/w") / "20000101T000000-000000.jsonl"
    stray.write_text("not json\n", encoding="utf-8")
    with pytest.warns(TornLineWarning, match="not a readable crab tape"):
        listed = asyncio.run(store.list_sessions())
    assert [i.id for i in listed] == [info.id]
    with pytest.raises(StoreError, match="not a crab session header"):
        asyncio.run(store.get_session("20000101T000000-000000"))
