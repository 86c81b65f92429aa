"""Nothing is lost when ``crab run`` is killed: kill -9 at random moments, resume, check every session.

Also two ``crab run`` processes appending to one session at once. Every store (PostgreSQL through
a throwaway server, when its binaries are there), real processes,
the scripted ``mock`` provider. When crab-tools-basic is installed its ``bash`` tool (a real,
slow tool) widens the window in which a tool call is stored but its result is not.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from crab._contracts.messages import AssistantMessage
from crab._contracts.storage import Entry, Store
from crab._values.history import NO_REPLY, STOPPED, build_context, unpaired_calls
from crab_store_sqlite import SqliteStore
from crab_tape_jsonl import TapeStore

CRAB = Path(sys.executable).with_name("crab")
SESSIONS = 10
KILLS_PER_SESSION = 5
PARALLEL = 4
HAS_BASH = any(ep.name == "tools-basic" for ep in entry_points(group="crab"))

pytestmark = [
    pytest.mark.filterwarnings("ignore::crab_tape_jsonl.TornLineWarning"),
    pytest.mark.skipif(not CRAB.exists(), reason=f"no crab command next to {sys.executable}"),
]


def usage(n: int) -> dict[str, dict[str, int]]:
    return {"usage": {"input_tokens": 100 + n, "output_tokens": 10 + n}}


def long_script(tag: str, steps: int = 30) -> dict[str, object]:
    """Every reply asks for a tool, so a turn keeps going until it is killed (or hits the iteration
    cap); arguments differ each time so the loop guard never stops it early.

    Call ids carry ``tag``: the scripted provider numbers calls per process, so two runs of one
    script in one session would reuse ids, which real providers do not.
    """
    shapes = [
        lambda n: [
            {"thinking": f"plan step {n}"},
            {"text": f"Working on step {n}. "},
            {"delay": 0.03},
            {"tool": "bash", "id": f"{tag}-{n}-bash", "args": {"command": f"sleep 0.12; echo slept {n}"}},
            usage(n),
        ],
        lambda n: [
            {"text": "Reading two things. "},
            {"tool": "read", "id": f"{tag}-{n}-read", "args": {"path": f"notes{n}.md"}},
            {"delay": 0.04},
            {"tool": "no_such_tool", "id": f"{tag}-{n}-none", "args": {"x": [n, 2, 3]}},
            usage(n),
        ],
        lambda n: [
            {"delay": 0.06},
            {"text": f"Still going {n}, ünïcode 🦀 " * 10},
            {"tool": "ls", "id": f"{tag}-{n}-ls", "args": {"path": f"d{n}"}},
            usage(n),
        ],
    ]
    return {"replies": [shapes[n % len(shapes)](n) for n in range(steps)], "loop": True}


def short_script(tag: str, steps: int) -> dict[str, object]:
    """A few quick tool calls, then a final answer: a turn that ends by itself."""
    replies: list[list[dict[str, object]]] = [
        [
            {"text": f"step {n} "},
            {"delay": 0.02},
            {"tool": "no_such_tool", "id": f"{tag}-{n}", "args": {"n": n}},
            usage(n),
        ]
        for n in range(steps)
    ]
    replies.append([{"text": "all steps done"}, usage(steps)])
    return {"replies": replies, "loop": False}


RESUME_SCRIPT = {"replies": [[{"text": "Resumed and answered."}, usage(0)]], "loop": False}


@dataclass(frozen=True)
class StoreKind:
    """How a test reaches one store: the plugin to load, the store name, and a direct handle."""

    plugin: str
    name: str
    make: Callable[[Path], Store]


STORE_KINDS = {
    "jsonl": StoreKind("tape-jsonl", "jsonl", lambda home: TapeStore(home / "sessions")),
    "sqlite": StoreKind("store-sqlite", "sqlite", lambda home: SqliteStore(home / "crab.db")),
}


@dataclass
class Harness:
    kind: StoreKind
    home: Path
    project: Path
    scripts: Path
    log: list[str] = field(default_factory=list)
    extra_env: dict[str, str] = field(default_factory=dict)

    def script(self, name: str, script: dict[str, object]) -> Path:
        path = self.scripts / f"{name}.json"
        path.write_text(json.dumps(script), encoding="utf-8")
        return path

    def command(self, script: Path, prompt: str, session_id: str) -> list[str]:
        plugins = f"provider-mock,{self.kind.plugin}" + (",tools-basic" if HAS_BASH else "")
        return [
            str(CRAB),
            "run",
            "--plugins",
            plugins,
            "--store",
            self.kind.name,
            "--model",
            f"mock/{script}",
            "--yolo",
            "--session",
            session_id,
            prompt,
        ]

    def env(self) -> dict[str, str]:
        env = {**os.environ, "CRAB_HOME": str(self.home), "NO_COLOR": "1"}
        for key in ("CRAB_PLUGINS", "CRAB_STORE", "CRAB_POSTGRES_DSN"):
            env.pop(key, None)
        return {**env, **self.extra_env}

    def start(self, script: Path, prompt: str, session_id: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self.command(script, prompt, session_id),
            cwd=self.project,
            env=self.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def finish(self, script: Path, prompt: str, session_id: str) -> None:
        done = subprocess.run(
            self.command(script, prompt, session_id),
            cwd=self.project,
            env=self.env(),
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 0, f"{prompt!r} on {session_id} exited {done.returncode}: {done.stderr.decode()}"

    def read(self, session_id: str, since_handoff: bool = False) -> list[Entry]:
        async def go() -> list[Entry]:
            store = self.kind.make(self.home)
            await store.open()
            try:
                return await store.entries(session_id, since_handoff=since_handoff)
            finally:
                await store.close()

        return asyncio.run(go())

    def create(self) -> str:
        async def go() -> str:
            store = self.kind.make(self.home)
            await store.open()
            try:
                return (await store.create_session(str(self.project))).id
            finally:
                await store.close()

        return asyncio.run(go())


def same(entries: list[Entry]) -> list[tuple[object, ...]]:
    return [(e.id, e.parent_id, e.type, e.time, json.dumps(e.payload, sort_keys=True)) for e in entries]


def assert_prefix(before: list[Entry], after: list[Entry], what: str) -> None:
    assert same(after[: len(before)]) == same(before), f"{what}: entries written before the kill changed or vanished"


def assert_chain(entries: list[Entry]) -> None:
    parent = None
    for entry in entries:
        assert entry.parent_id == parent, f"entry {entry.id} has parent {entry.parent_id}, expected {parent}"
        parent = entry.id


def assert_valid_context(entries: list[Entry]) -> None:
    """What the provider would be sent is well formed: every call paired, nothing aborted replayed."""
    context = build_context(entries)
    assert unpaired_calls(context) == []
    assert all(m.replayable for m in context if isinstance(m, AssistantMessage))


def check_files(harness: Harness, session_id: str, kills: int) -> None:
    """JSON lines parse (a torn line per kill at most) and the header leads; SQLite is intact."""
    if harness.kind.name == "jsonl":
        (path,) = (harness.home / "sessions").glob(f"*/{session_id}.jsonl")
        lines = path.read_bytes().split(b"\n")
        assert lines[-1] == b"", "the tape must end with a newline after a clean resume"
        assert json.loads(lines[0])["crab_session"] == 1
        bad = 0
        for line in lines[1:-1]:
            try:
                json.loads(line)
            except ValueError:
                bad += 1
        assert bad <= kills
    elif harness.kind.name == "sqlite":
        with sqlite3.connect(harness.home / "crab.db") as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def crash_state(entries: list[Entry]) -> str:
    """What a kill left behind, for the summary printed with ``-s``: which repair resume needs."""
    answered = {e.payload.get("call_id") for e in entries if e.type == "tool_result"}
    last_message = next((e for e in reversed(entries) if e.type == "message"), None)
    for entry in entries:
        for call in entry.payload.get("tool_calls", ()) if entry.type == "message" else ():
            if call.get("id") not in answered:
                return "unanswered tool call"
    if last_message is not None and last_message.payload.get("role") == "user":
        return "user message without a reply"
    return "clean"


def kill_lane(harness: Harness, lane: int, seed: int) -> int:
    """Kill a run on one session KILLS_PER_SESSION times, then resume it cleanly and check it."""
    rng = random.Random(seed * 1000 + lane)
    session_id = harness.create()
    snapshots: list[list[Entry]] = []
    killed = 0
    for attempt in range(KILLS_PER_SESSION):
        if attempt == 2:
            harness.finish(harness.scripts / "resume.json", f"/handoff lane{lane}", session_id)
        script = harness.script(f"long-{lane}-{attempt}", long_script(f"l{lane}a{attempt}"))
        process = harness.start(script, f"lane {lane} attempt {attempt}: keep working", session_id)
        time.sleep(rng.uniform(0.1, 2.0))
        before = harness.read(session_id)
        alive = process.poll() is None
        process.kill()
        process.wait(timeout=30)
        stderr = process.stderr.read().decode() if process.stderr else ""
        if process.stderr:
            process.stderr.close()
        assert alive, f"crab run ended before it was killed (exit {process.returncode}): {stderr}"
        killed += 1
        after = harness.read(session_id)
        assert_prefix(before, after, f"lane {lane} attempt {attempt}")
        snapshots.append(after)
        harness.log.append(crash_state(after))
    harness.finish(harness.scripts / "resume.json", f"lane {lane}: resume after the crashes", session_id)

    final = harness.read(session_id)
    for snapshot in snapshots:
        assert_prefix(snapshot, final, f"lane {lane} after resume")
    assert_chain(final)
    resumed = [i for i, e in enumerate(final) if e.payload.get("content") == f"lane {lane}: resume after the crashes"]
    assert len(resumed) == 1
    # A resume first gives the call the kill interrupted its stand-in result (issue 32 item 2),
    # and a prompt the kill left unanswered its stand-in reply (recorded, so the resumed context
    # is the stored one): between the last snapshot and the resumed prompt there are only those.
    between = final[len(snapshots[-1]) : resumed[0]]
    assert all(e.payload.get("content") in (STOPPED, NO_REPLY) for e in between), between
    assert [e for e in between if e.payload.get("content") == NO_REPLY] in ([], between[-1:]), between
    assert final[resumed[0]].parent_id == (between[-1].id if between else snapshots[-1][-1].id)
    assert any(e.payload.get("content") == "Resumed and answered." for e in final[resumed[0] :])
    handoffs = [e for e in final if e.type == "anchor" and e.payload.get("kind") == "handoff"]
    assert [h.payload["name"] for h in handoffs] == [f"lane{lane}"]
    recent = harness.read(session_id, since_handoff=True)
    assert recent[0].id == handoffs[0].id
    assert same(recent) == same(final[final.index(handoffs[0]) :])
    assert_valid_context(recent)
    assert_valid_context(final)
    check_files(harness, session_id, KILLS_PER_SESSION)
    return killed


def harness_for(tmp_path: Path, store: str, request: pytest.FixtureRequest) -> Harness:
    project = tmp_path / "project"
    project.mkdir()
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    home = tmp_path / "home"
    if store == "postgres":
        # Every crab run is a separate worker on one server: the sessions live in a fresh schema.
        from crab_store_postgres import PostgresStore

        dsn: str = request.getfixturevalue("postgres_dsn")
        schema: str = request.getfixturevalue("postgres_schema")
        home.mkdir()
        (home / "config.toml").write_text(f'[plugins.store-postgres]\nschema = "{schema}"\n', encoding="utf-8")
        kind = StoreKind("store-postgres", "postgres", lambda _home: PostgresStore(dsn, schema=schema))
        harness = Harness(kind=kind, home=home, project=project, scripts=scripts, extra_env={"CRAB_POSTGRES_DSN": dsn})
    else:
        harness = Harness(kind=STORE_KINDS[store], home=home, project=project, scripts=scripts)
    harness.script("resume", RESUME_SCRIPT)
    return harness


@pytest.mark.slow
@pytest.mark.parametrize("store", ["jsonl", "sqlite", "postgres"])
def test_fifty_kills_lose_nothing_and_every_session_resumes(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    harness = harness_for(tmp_path, store, request)
    seed = int(os.environ.get("CRAB_KILL_SEED", "20261130"))
    with ThreadPoolExecutor(PARALLEL) as pool:
        killed = sum(pool.map(lambda lane: kill_lane(harness, lane, seed), range(SESSIONS)))
    assert killed == SESSIONS * KILLS_PER_SESSION == 50
    states = {state: harness.log.count(state) for state in sorted(set(harness.log))}
    print(f"{store}: 50 kills left sessions in these states: {states}")


@pytest.mark.parametrize("store", ["jsonl", "sqlite", "postgres"])
def test_two_crab_processes_append_to_one_session_at_once(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    harness = harness_for(tmp_path, store, request)
    solo = harness.create()
    harness.finish(harness.script("solo", short_script("solo", 12)), "writer solo", solo)
    per_run = len(harness.read(solo))

    session_id = harness.create()
    processes = [
        harness.start(harness.script(name, short_script(name, 12)), f"writer {name}", session_id) for name in ("a", "b")
    ]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()

    entries = harness.read(session_id)
    # The second process resumes while the first may have a call in flight: a resume stores a
    # stand-in only when no turn of the session runs (crab._system.live_sessions).
    stopped = [e.payload.get("call_id") for e in entries if e.payload.get("content") == STOPPED]
    assert stopped == [], f"a resume stored a stand-in for calls the other live process still ran: {stopped}"
    assert len(entries) == 2 * per_run
    assert_chain(entries)
    prompts = [e.payload.get("content") for e in entries if e.payload.get("role") == "user"]
    assert sorted(prompts) == ["writer a", "writer b"]
    answers = [e for e in entries if e.payload.get("content") == "all steps done"]
    assert len(answers) == 2
    results = [e for e in entries if e.type == "tool_result"]
    calls = [c for e in entries if e.type == "message" for c in e.payload.get("tool_calls", ())]
    assert len(results) == len(calls) == 24
    assert_valid_context(entries)
    check_files(harness, session_id, 0)
