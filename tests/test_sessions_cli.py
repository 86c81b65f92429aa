"""``crab sessions`` driven as a user would: the real ``crab`` command, a real store, a scripted model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from crab.testing import run_cli

pytestmark = pytest.mark.slow  # ~20 crab commands per test

CRAB = Path(sys.executable).with_name("crab")
PLUGINS = "provider-mock,tape-jsonl,store-sqlite"
SCRIPT = {
    "replies": [
        [
            {"text": "Looking at the pelican report."},
            {"tool": "read", "args": {"path": "report.md"}},
            {"usage": {"input_tokens": 120, "output_tokens": 30}},
        ],
        [{"text": "The pelican count is forty-two."}, {"usage": {"input_tokens": 200, "output_tokens": 12}}],
    ],
    "loop": False,
}


@dataclass
class Crab:
    """Runs ``crab`` in a project folder with its own CRAB_HOME."""

    home: Path
    project: Path
    script: Path

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "CRAB_HOME": str(self.home), "CRAB_PLUGINS": PLUGINS, "NO_COLOR": "1"}
        env.pop("CRAB_STORE", None)
        done = subprocess.run([str(CRAB), *args], cwd=self.project, env=env, capture_output=True, text=True, timeout=60)
        if check and done.returncode != 0:
            raise AssertionError(f"crab {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def run(self, store: str, prompt: str, *extra: str) -> None:
        self("run", "--store", store, "-m", f"mock/{self.script}", "--yolo", *extra, prompt)

    def json(self, *args: str) -> object:
        return json.loads(self(*args).stdout)


@pytest.fixture
def crab(tmp_path: Path) -> Crab:
    if not CRAB.exists():
        pytest.skip(f"no crab command next to {sys.executable}")
    project = tmp_path / "project"
    project.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    return Crab(home=tmp_path / "home", project=project, script=script)


@pytest.mark.parametrize("store", ["jsonl", "sqlite"])
def test_list_show_search_fork_export(crab: Crab, store: str) -> None:
    crab.run(store, "count the pelicans")
    crab.run(store, "and the herons")
    listed = crab.json("sessions", "list", "--json", "--store", store)
    assert isinstance(listed, list)
    assert len(listed) == 2
    newest, oldest = listed
    assert newest["workspace"] == str(crab.project)
    assert newest["entry_count"] >= 5
    assert newest["updated"] >= oldest["updated"]
    text = crab("sessions", "list", "--store", store).stdout
    assert newest["id"] in text
    assert oldest["id"] in text
    assert crab.json("sessions", "list", "--json", "--store", store, "--workspace", "/elsewhere") == []

    shown = crab("sessions", "show", oldest["id"], "--store", store).stdout
    assert "count the pelicans" in shown
    assert "result read [error]" in shown
    document = crab.json("sessions", "show", oldest["id"], "--json", "--store", store)
    assert isinstance(document, dict)
    entries = document["entries"]
    assert entries[0]["payload"]["content"] == "count the pelicans"
    parent = None
    for entry in entries:
        assert entry["parent_id"] == parent
        parent = entry["id"]

    hits = crab.json("sessions", "search", "herons", "--json", "--store", store)
    assert isinstance(hits, list)
    assert [h["session_id"] for h in hits] == [newest["id"]]
    assert crab("sessions", "search", "pelican forty-two", "--store", store).stdout.count("\n") == 2
    assert crab("sessions", "search", "xylophonist quokkas", "--store", store).stdout.strip() == "no matches"

    user_entry = entries[0]["id"]
    fork_id = crab("sessions", "fork", oldest["id"], "--at", user_entry, "--store", store).stdout.strip()
    fork = crab.json("sessions", "show", fork_id, "--json", "--store", store)
    assert isinstance(fork, dict)
    assert fork["session"]["forked_from"] == oldest["id"]
    assert fork["session"]["fork_entry"] == user_entry
    assert [e["id"] for e in fork["entries"]] == [user_entry]
    crab.run(store, "go on from the fork", "--session", fork_id)
    resumed = crab.json("sessions", "show", fork_id, "--json", "--store", store)
    assert isinstance(resumed, dict)
    # The fork ends on a prompt the model never answered: the turn records that (crab's stand-in
    # reply) before the new prompt, so the stored context is the one the model is sent.
    assert resumed["entries"][1]["parent_id"] == user_entry
    assert resumed["entries"][1]["payload"]["content"].startswith("(no reply:")
    assert resumed["entries"][2]["payload"]["content"] == "go on from the fork"

    lines = crab("sessions", "export", oldest["id"], "--format", "jsonl", "--store", store).stdout.splitlines()
    header, *exported = (json.loads(line) for line in lines)
    assert header["id"] == oldest["id"]
    assert header["crab_session"] == 1
    assert exported == entries
    markdown = crab("sessions", "export", oldest["id"], "--format", "markdown", "--store", store).stdout
    assert markdown.startswith(f"# Session {oldest['id']}")
    assert "## User" in markdown
    assert "count the pelicans" in markdown
    assert "The pelican count is forty-two." in markdown


@pytest.mark.parametrize("store", ["jsonl", "sqlite"])
def test_unknown_sessions_are_usage_errors_with_one_line(
    crab: Crab, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = [
        ("sessions", "show", "nope"),
        ("sessions", "show", "20000101T000000-000000"),
        ("sessions", "fork", "nope"),
        ("sessions", "export", "../etc/passwd"),
        ("run", "-m", f"mock/{crab.script}", "--session", "nope", "hello"),
    ]
    # The first through the real command; the others in this process (crab.testing.run_cli), one
    # interpreter for all: the message and exit code are the CLI's, whichever process prints them.
    done = crab(*cases[0], "--store", store, check=False)
    assert (done.returncode, done.stderr.startswith("crab: no session")) == (2, True), done.stderr
    monkeypatch.chdir(crab.project)
    env = {"CRAB_HOME": str(crab.home), "CRAB_PLUGINS": PLUGINS, "NO_COLOR": "1", "CRAB_STORE": None}
    for args in cases:
        result = run_cli(*args, "--store", store, env=env)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        assert result.stderr.startswith("crab: no session"), result.stderr
        assert result.stderr.endswith("(see `crab sessions list`)\n")
        assert len(result.stderr.splitlines()) == 1
        if args == cases[0]:
            assert result.stderr == done.stderr, "in this process as through the command"


def test_a_store_that_cannot_open_is_one_line_exit_2(crab: Crab) -> None:
    crab.home.mkdir()
    (crab.home / "crab.db").write_text("not a database\n" * 100)
    (crab.home / "sessions").write_text("a file where the tape folder goes")
    for store in ("sqlite", "jsonl"):
        for args in (("run", "-m", f"mock/{crab.script}", "hello"), ("sessions", "list")):
            done = crab(*args, "--store", store, check=False)
            assert done.returncode == 2, (store, args, done.stderr)
            assert done.stderr.startswith("crab: cannot "), done.stderr
            assert "--store NAME" in done.stderr and len(done.stderr.splitlines()) == 1
    assert (crab.home / "crab.db").read_text() == "not a database\n" * 100  # nothing was overwritten


def test_migrate_keeps_ids_parents_times_and_forks(crab: Crab) -> None:
    crab.run("jsonl", "count the pelicans")
    crab.run("jsonl", "and the herons")
    first = crab.json("sessions", "list", "--json", "--store", "jsonl")
    assert isinstance(first, list)
    crab("sessions", "fork", first[-1]["id"], "--store", "jsonl")
    sessions = crab.json("sessions", "list", "--json", "--store", "jsonl")
    assert isinstance(sessions, list)

    done = crab("sessions", "migrate", "--from", "jsonl", "--to", "sqlite")
    assert "copied 3 sessions" in done.stdout
    again = crab("sessions", "migrate", "--from", "jsonl", "--to", "sqlite")
    assert "copied 0 sessions" in again.stdout
    assert "3 already there" in again.stdout

    def export(store: str, session_id: str) -> str:
        return crab("sessions", "export", session_id, "--format", "jsonl", "--store", store).stdout

    migrated = crab.json("sessions", "list", "--json", "--store", "sqlite")
    assert isinstance(migrated, list)
    assert [s["id"] for s in migrated] == [s["id"] for s in sessions]
    for session in sessions:
        assert export("sqlite", session["id"]) == export("jsonl", session["id"])
    fork = next(s for s in migrated if s["forked_from"])
    assert fork["forked_from"] == first[-1]["id"]
    by_id = {s["id"]: s for s in migrated}
    assert by_id[first[0]["id"]]["usage"] == {"input_tokens": 320, "output_tokens": 42}

    # Back again, into an empty tape folder, from the SQLite store as the configured one.
    (crab.home / "config.toml").write_text(
        f'[crab]\nstore = "sqlite"\n\n[plugins.tape-jsonl]\nroot = "{crab.home / "tapes2"}"\n', encoding="utf-8"
    )
    done = crab("sessions", "migrate", "--to", "jsonl")
    assert "copied 3 sessions" in done.stdout
    for session in sessions:
        assert export("jsonl", session["id"]) == export("sqlite", session["id"])
    refused = crab("sessions", "migrate", "--to", "sqlite", check=False)
    assert refused.returncode == 2
    assert "both 'sqlite'" in refused.stderr


def test_migrate_sessions_into_a_store_without_import_appends_afresh(tmp_path: Path) -> None:
    import asyncio

    from crab._builtin.memory_store import MemoryStore
    from crab._cli.sessions import migrate_sessions
    from crab_tape_jsonl import TapeStore

    async def go() -> None:
        source = MemoryStore()
        info = await source.create_session("/w", title="t")
        first = await source.append(info.id, "message", {"v": 1, "role": "user", "content": "hi"})
        await source.append(info.id, "anchor", {"name": "h", "kind": "handoff", "state": {}})
        await source.fork(info.id, at_entry=first.id)

        plain = MemoryStore()
        report = await migrate_sessions(source, plain)
        assert (len(report.copied), report.skipped, report.entries) == (2, [], 3)
        copied = await plain.list_sessions()
        assert sorted(s.entry_count or 0 for s in copied) == [1, 2]
        assert {s.id for s in copied}.isdisjoint({s.id for s in await source.list_sessions()})

        tapes = TapeStore(tmp_path / "tapes")
        await tapes.open()
        report = await migrate_sessions(source, tapes)
        assert len(report.copied) == 2
        for session in await source.list_sessions():
            assert await tapes.entries(session.id) == await source.entries(session.id)
            assert (await tapes.get_session(session.id)).forked_from == session.forked_from
        again = await migrate_sessions(source, tapes)
        assert (again.copied, len(again.skipped)) == ([], 2)
        await tapes.close()

    asyncio.run(go())
