"""Eight ``crab run -c`` processes on one session at once, then a resume: no stored result is lost.

Concurrent writers interleave their replies and tool results in the store, so a result often
lands after another process's reply. Resuming must still pair every stored result with its call
(by id) instead of replacing it with the synthetic "No result provided". Both stores, real
processes, the scripted ``mock`` provider; the context is built the way ``Agent.resume`` builds it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from crab import Store
from crab._values.history import NO_RESULT, build_context, unpaired_calls
from crab.messages import ToolResultMessage
from crab_store_sqlite import SqliteStore
from crab_tape_jsonl import TapeStore

pytestmark = pytest.mark.slow

pytest.importorskip("crab_tools_basic", reason="the writers run the real bash tool")

WRITERS = 8
STEPS = 2
STORES = {
    "jsonl": ("tape-jsonl", lambda home: TapeStore(home / "sessions")),
    "sqlite": ("store-sqlite", lambda home: SqliteStore(home / "crab.db")),
}


def script(tag: str) -> dict[str, object]:
    """Tool calls with ids unique to this writer (as real providers give); the real ``bash`` tool
    sleeps, so other writers store their replies between a call and its result."""
    replies: list[list[dict[str, object]]] = [
        [
            {"text": f"{tag} step {n} "},
            {"delay": 0.05},
            {"tool": "bash", "id": f"{tag}-{n}", "args": {"command": f"sleep 0.4; echo {tag}-{n}"}},
        ]
        for n in range(STEPS)
    ]
    replies.append([{"delay": 0.05}, {"text": f"{tag} done"}])
    return {"replies": replies}


def crab(home: Path, work: Path, plugin: str, store: str, script_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(home), NO_COLOR="1")
    plugins = f"provider-mock,tools-basic,{plugin}"
    command = [sys.executable, "-m", "crab", "run", "--plugins", plugins, "--store", store]
    command += ["-m", f"mock/{script_path}", "--yolo", *args]
    return subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stored(make: object, home: Path) -> tuple[list[object], list[object]]:
    async def read() -> tuple[list[object], list[object]]:
        store: Store = make(home)  # type: ignore[operator]
        await store.open()
        try:
            (info,) = await store.list_sessions()
            return await store.entries(info.id), await store.entries(info.id, since_handoff=True)
        finally:
            await store.close()

    return asyncio.run(read())


@pytest.mark.parametrize("store", sorted(STORES))
def test_resume_after_concurrent_writers_keeps_every_stored_result(tmp_path: Path, store: str) -> None:
    plugin, make = STORES[store]
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    scripts = []
    for i in range(WRITERS + 1):
        path = tmp_path / f"w{i}.json"
        path.write_text(json.dumps(script(f"w{i}")))
        scripts.append(path)
    first = crab(home, work, plugin, store, scripts[0], "start")
    assert first.wait(timeout=60) == 0, first.communicate()[1]
    writers = [crab(home, work, plugin, store, scripts[i], "-c", f"writer {i}") for i in range(1, WRITERS + 1)]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err

    entries, since_handoff = stored(make, home)
    results = {e.payload["call_id"]: e.payload["content"] for e in entries if e.type == "tool_result"}  # type: ignore[attr-defined]
    assert len(results) == (WRITERS + 1) * STEPS
    context = build_context(since_handoff)  # type: ignore[arg-type]
    assert unpaired_calls(context) == []
    in_context = {m.call_id: m.content for m in context if isinstance(m, ToolResultMessage)}
    replaced = sorted(call_id for call_id, content in in_context.items() if content == NO_RESULT)
    assert replaced == [], f"{len(replaced)} of {len(results)} stored results replaced on resume"
    assert in_context == results

    resumed = crab(home, work, plugin, store, scripts[0], "-c", "-o", "json", "after all of them")
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    assert json.loads(out)["stop"] == "end"
