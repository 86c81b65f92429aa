"""kill -9 during a ``bash`` call, then ``crab run --continue``: the store pairs every call again.

The real ``crab`` command on the jsonl and sqlite stores, the scripted ``mock`` provider and the
real ``bash`` tool of crab-tools-basic. Before the fix the stored session kept the killed call
without a result for ever (only the history sent to the provider was repaired).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from crab import Store
from crab._values.history import STOPPED

pytest.importorskip("crab_tools_basic", reason="the killed call is the real bash tool")
pytest.importorskip("crab_provider_mock", reason="the run is scripted")

STORES: dict[str, tuple[str, Callable[[Path], Store]]] = {}
try:
    from crab_tape_jsonl import TapeStore

    STORES["jsonl"] = ("tape-jsonl", lambda home: TapeStore(home / "sessions"))
except ImportError:
    pass
try:
    from crab_store_sqlite import SqliteStore

    STORES["sqlite"] = ("store-sqlite", lambda home: SqliteStore(home / "crab.db"))
except ImportError:
    pass


def script(marker: Path) -> dict[str, object]:
    """Two replies with tools: one quick call, then a quick one beside one that signals it runs and sleeps."""
    return {
        "replies": [
            [{"text": "First. "}, {"tool": "bash", "id": "k-1", "args": {"command": "echo one"}}],
            [
                {"text": "Two at once. "},
                {"tool": "bash", "id": "k-2", "args": {"command": "echo two"}},
                {"tool": "bash", "id": "k-3", "args": {"command": f"touch {marker}; sleep 30"}},
            ],
            [{"text": "never reached"}],
        ]
    }


def crab(home: Path, work: Path, store: str, plugin: str, script_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(home), NO_COLOR="1")
    command = [sys.executable, "-m", "crab", "run", "--plugins", f"provider-mock,tools-basic,{plugin}"]
    command += ["--store", store, "-m", f"mock/{script_path}", "--yolo", *args]
    return subprocess.Popen(
        command,
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # kill -9 reaches the bash child too
    )


def counts(make: Callable[[Path], Store], home: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """Every stored tool call id, and every stored result as ``(call id, content)``."""

    async def read() -> tuple[list[str], list[tuple[str, str]]]:
        store = make(home)
        await store.open()
        try:
            (info,) = await store.list_sessions()
            entries = await store.entries(info.id)
        finally:
            await store.close()
        calls = [c["id"] for e in entries if e.type == "message" for c in e.payload.get("tool_calls", ())]
        results = [(e.payload["call_id"], e.payload["content"]) for e in entries if e.type == "tool_result"]
        return calls, results

    return asyncio.run(read())


@pytest.mark.filterwarnings("ignore::UserWarning")  # a torn last line of the jsonl tape
@pytest.mark.parametrize("store", sorted(STORES))
def test_a_call_killed_mid_run_gets_its_stored_result_on_continue(tmp_path: Path, store: str) -> None:
    plugin, make = STORES[store]
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    marker = tmp_path / "running"
    first = tmp_path / "first.json"
    first.write_text(json.dumps(script(marker)))
    after = tmp_path / "after.json"
    after.write_text(json.dumps({"replies": [[{"text": "resumed"}]]}))

    run = crab(home, work, store, plugin, first, "do the work")
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "the sleeping bash call never started"
            time.sleep(0.05)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.communicate()
    calls, results = counts(make, home)
    assert calls == ["k-1", "k-2", "k-3"]
    assert "k-3" not in {call_id for call_id, _ in results}  # what the kill leaves

    resumed = crab(home, work, store, plugin, after, "--continue", "-o", "json", "carry on")
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    assert json.loads(out)["text"] == "resumed"
    calls, results = counts(make, home)
    assert sorted(call_id for call_id, _ in results) == sorted(calls) == ["k-1", "k-2", "k-3"]
    assert dict(results)["k-3"] == STOPPED

    again = crab(home, work, store, plugin, after, "--continue", "once more")
    assert again.communicate(timeout=60) and again.returncode == 0
    assert len(counts(make, home)[1]) == 3  # stored once, not on every resume
