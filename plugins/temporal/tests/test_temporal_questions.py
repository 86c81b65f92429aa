"""People in the loop across processes, on a real Temporal dev server with real ``crab worker``
processes: a worker's tool call that needs the user's word asks the client that holds the
user's terminal (`crab run --engine temporal` on a real pseudo-terminal), through the turn's
workflow; the answer comes back and the call runs, or is refused. No client: the question waits
``question_wait``, then the call is refused, never allowed. Answers that are not the user's (an
unknown question, one not shown yet, a stale one) are refused. ``ask_user`` asks the same way;
Ctrl-C on the client ends the tool's whole process group on the worker."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from crab.testing import process_alive
from temporal_site import DEADLINE, PLUGINS, Site, temporal_binary, wait_for
from test_temporal_turns import HISTORIES, INTERRUPTED, exported, history_json, payloads, results_per_call

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crab-temporal-server")]

ASKING = f"{PLUGINS},ask"
PROMPT = "answer (y, a or n, then Enter)> "
REFUSED = "The user refused this exec call (bash). Ask them how to proceed."
NOBODY_ANSWERED = (
    "Refused: bash needs exec permission and nobody answered the question about this call, "
    "so nothing was allowed. Tell the user what you wanted to do; they can allow it when they are there."
)
SECRET = "sk-temporal-question-0123456789abcdef"


class Terminal:
    """``crab run --engine temporal`` with its stdin and stderr on a real pseudo-terminal (so it
    asks, as at a keyboard), stdout in a file."""

    def __init__(self, site: Site, *args: str, plugins: str = ASKING) -> None:
        assert site.script is not None
        master, slave = pty.openpty()
        self.master = master
        self.stdout = site.root / f"terminal-{len(list(site.root.glob('terminal-*')))}.stdout"
        command = site.crab("run", "--plugins", plugins, "-m", f"mock/{site.script}", "--engine", "temporal", *args)
        with self.stdout.open("wb") as out:
            self.process = subprocess.Popen(
                command, cwd=site.workspace, env=site.env, stdin=slave, stdout=out, stderr=slave, start_new_session=True
            )
        os.close(slave)
        self.screen = bytearray()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:  # the other side closed: the process ended
                return
            if not data:
                return
            self.screen.extend(data)

    def text(self) -> str:
        return self.screen.decode("utf-8", "replace")

    def wait_for(self, text: str, count: int = 1) -> None:
        wait_for(lambda: self.text().count(text) >= count or self.process.poll() is not None, repr(text))
        assert self.text().count(text) >= count, self.text()

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def finish(self) -> int:
        code = self.process.wait(DEADLINE)
        self.reader.join(10)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)
        os.close(self.master)


def temporal(site: Site, *args: str) -> subprocess.CompletedProcess[str]:
    binary = temporal_binary()
    assert binary is not None
    command = [binary, *args, "--address", site.address]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def progress(site: Site, workflow: str) -> dict[str, Any]:
    shown = temporal(site, "workflow", "query", "-w", workflow, "--name", "progress", "-o", "json")
    if shown.returncode != 0:
        return {}
    return dict(json.loads(shown.stdout)["queryResult"][0])


def update(site: Site, workflow: str, name: str, *inputs: Any) -> subprocess.CompletedProcess[str]:
    args = ["workflow", "update", "execute", "-w", workflow, "--name", name]
    for value in inputs:
        args += ["--input", json.dumps(value)]
    return temporal(site, *args)


def tool_results(site: Site, session_id: str) -> list[list[str]]:
    return [[r["content"] for r in results] for results in results_per_call(exported(site, session_id)).values()]


def write_call(site: Site, marker: Path, secret: str = "") -> None:
    command = f"echo once{secret} >> {marker}"
    site.write_script([[{"tool": "bash", "args": {"command": command}}], [{"text": "finished"}]])


def test_a_permission_answered_yes_on_the_client_runs_the_call_once(site: Site):
    marker = site.root / "effects"
    write_call(site, marker)
    site.start_worker("a", yolo=False, plugins=ASKING)
    terminal = Terminal(site, "-o", "json", "change something")
    try:
        terminal.wait_for(PROMPT)  # the worker's question, shown by the client's own terminal question
        assert '? allow exec: bash(command="echo once >> ' in terminal.text()
        assert not marker.exists()  # nothing ran before the user's word
        terminal.type("y\r")
        assert terminal.finish() == 0, terminal.text()
    finally:
        terminal.kill()
    doc = json.loads(terminal.stdout.read_text())
    assert (doc["stop"], doc["text"]) == ("end", "finished")
    assert marker.read_text().splitlines() == ["once"]
    assert tool_results(site, doc["session_id"]) == [["(no output)\n[exit code 0]"]]


def test_a_permission_answered_no_is_refused_and_the_model_sees_the_refusal(site: Site):
    marker = site.root / "effects"
    write_call(site, marker)
    site.start_worker("a", yolo=False, plugins=ASKING)
    terminal = Terminal(site, "-o", "json", "change something")
    try:
        terminal.wait_for(PROMPT)
        terminal.type("n\r")
        assert terminal.finish() == 0, terminal.text()
    finally:
        terminal.kill()
    doc = json.loads(terminal.stdout.read_text())
    assert doc["text"] == "finished"
    assert not marker.exists()
    assert tool_results(site, doc["session_id"]) == [[REFUSED]]


def test_always_answered_once_spares_the_sessions_next_question_of_that_class(site: Site):
    marker = site.root / "effects"
    site.write_script(
        [
            [{"tool": "bash", "args": {"command": f"echo first >> {marker}"}}],
            [{"tool": "bash", "args": {"command": f"echo second >> {marker}"}}],
            [{"text": "finished"}],
        ]
    )
    site.start_worker("a", yolo=False, plugins=ASKING)
    terminal = Terminal(site, "-o", "json", "change two things")
    try:
        terminal.wait_for(PROMPT)
        terminal.type("a\r")
        assert terminal.finish() == 0, terminal.text()
    finally:
        terminal.kill()
    assert terminal.text().count(PROMPT) == 1  # the second exec call was not asked about
    assert marker.read_text().splitlines() == ["first", "second"]


def test_a_client_that_cannot_ask_gets_the_call_refused_at_once(site: Site):
    # `crab run` from a script (no terminal): nobody can answer, so the call is refused at once,
    # as in one process; the worker does not sit out its wait.
    marker = site.root / "effects"
    write_call(site, marker)
    site.start_worker("a", yolo=False, plugins=ASKING)
    command = site.crab("run", "--plugins", ASKING, "-m", f"mock/{site.script}", "--engine", "temporal", "-o", "json")
    result = subprocess.run(
        [*command, "change something"], cwd=site.workspace, env=site.env, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert not marker.exists()
    assert tool_results(site, doc["session_id"]) == [[NOBODY_ANSWERED]]


def test_no_client_the_question_waits_then_the_call_is_refused_never_allowed(site: Site):
    config = site.root / "home" / "config.toml"
    config.write_text(config.read_text() + "question_wait = 6\n")  # [plugins.temporal] is the file's last table
    marker = site.root / "effects"
    write_call(site, marker)
    site.start_worker("a", yolo=False, plugins=ASKING)
    terminal = Terminal(site, "-o", "json", "change something")
    try:
        terminal.wait_for(PROMPT)
        terminal.kill()  # the client dies with the question on its screen
    finally:
        terminal.kill() if terminal.process.poll() is None else None
    session_id = site.only_session()
    wait_for(lambda: tool_results(site, session_id) == [[NOBODY_ANSWERED]], "the call to be refused after the wait")
    workflow = f"crab-session-{session_id}"
    wait_for(
        lambda: '"status": "WORKFLOW_EXECUTION_STATUS_COMPLETED"' in _describe(site, workflow),
        "the turn to end without its client",
    )
    assert not marker.exists()


def test_answers_that_are_not_the_users_are_refused_and_the_question_holds_no_secret(site: Site):
    # A turn started with no client at all (Temporal's own CLI): its question stays open, so an
    # answer to it before it was shown, to a question that does not exist, of a kind a permission
    # does not take, or after it was answered, is refused. The question's text in Temporal's
    # history has the secret in the call's arguments masked.
    marker = site.root / "effects"
    site.env["DEMO_API_KEY"] = SECRET
    site.write_script(
        [
            [{"text": "hello"}],
            [{"tool": "bash", "args": {"command": f"echo once{SECRET} >> {marker}"}}],
            [{"tool": "bash", "args": {"command": f"echo twice >> {marker}"}}],
            [{"text": "finished"}],
        ]
    )
    site.start_worker("a", yolo=False, plugins=ASKING)
    first = subprocess.run(
        [
            *site.crab("run", "--plugins", ASKING, "-m", f"mock/{site.script}", "--engine", "temporal", "-o", "json"),
            "hi",
        ],
        cwd=site.workspace,
        env=site.env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert first.returncode == 0, first.stderr
    session_id = json.loads(first.stdout)["session_id"]
    workflow = f"crab-session-{session_id}"
    turn = {
        "session_id": session_id,
        "turn_id": "forged1",
        "prompt": "change something",
        "max_iterations": 5,
        "tool_timeout": 60.0,
        "heartbeat": 0.5,
        "question_wait": 120.0,
    }
    started = temporal(
        site, "workflow", "start", "--type", "crab-turn", "--task-queue", site.task_queue, "-w", workflow,
        "--input", json.dumps(turn),
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    questions = wait_for(lambda: progress(site, workflow).get("questions"), "the worker's question")
    [asked] = questions
    assert (asked["kind"], asked["tool"], asked["state"]) == ("permission", "bash", "open")
    assert "[redacted]" in asked["summary"] and SECRET not in json.dumps(asked)
    question_id = asked["id"]

    early = update(site, workflow, "answer", question_id, "once")
    assert early.returncode != 0 and "has not been shown to the user" in early.stderr + early.stdout
    unknown = update(site, workflow, "answer", "forged.1/call_x/ask1", "once")
    assert unknown.returncode != 0 and "no question" in unknown.stderr + unknown.stdout
    assert update(site, workflow, "shown", question_id).returncode == 0
    again = update(site, workflow, "shown", question_id)
    assert again.returncode != 0
    bad = update(site, workflow, "answer", question_id, "sure")
    assert bad.returncode != 0 and "once, always or deny" in bad.stderr + bad.stdout
    assert not marker.exists()
    said = update(site, workflow, "answer", question_id, "deny")
    assert said.returncode == 0, said.stderr
    # The next call's question keeps the turn waiting: the first one's answer is stale now.
    [second] = wait_for(
        lambda: [q for q in progress(site, workflow).get("questions") or [] if q["id"] != question_id],
        "the next question",
    )
    stale = update(site, workflow, "answer", question_id, "once")
    assert stale.returncode != 0 and "too late" in stale.stderr + stale.stdout
    assert update(site, workflow, "shown", second["id"]).returncode == 0
    assert update(site, workflow, "answer", second["id"], "deny").returncode == 0

    wait_for(lambda: '"status": "WORKFLOW_EXECUTION_STATUS_COMPLETED"' in _describe(site, workflow), "the turn's end")
    assert not marker.exists()
    assert tool_results(site, session_id) == [[REFUSED], [REFUSED]]
    history = history_json(site, session_id)
    kept = payloads(history)
    assert "bash(command=" in kept and "[redacted]" in kept
    assert SECRET not in kept
    if os.environ.get("UPDATE_SNAPSHOTS"):  # replayed by test_temporal_replay.py: the updates too
        (HISTORIES / "turn_with_a_refused_question.json").write_text(history)


def test_ctrl_c_while_the_question_is_shown_aborts_the_turn_and_nothing_runs(site: Site):
    marker = site.root / "effects"
    write_call(site, marker)
    site.start_worker("a", yolo=False, plugins=ASKING)
    terminal = Terminal(site, "change something")
    try:
        terminal.wait_for(PROMPT)
        # The plain renderer showed the call before the question about it, as in one process.
        assert -1 < terminal.text().find("→ bash(") < terminal.text().find("? allow exec: bash("), terminal.text()
        os.killpg(terminal.process.pid, signal.SIGINT)
        code = terminal.finish()
    finally:
        terminal.kill()
    # 130 and one line, however long the settle takes on the worker (the client waits for it at
    # most SETTLE_WAIT, then says the turn is stopping there): the turn settles where it ran.
    assert code == 130, terminal.text()
    for dump in ("Traceback", "Timeout (", "Thread 0x"):
        assert dump not in terminal.text(), terminal.text()
    assert terminal.text().rstrip().splitlines()[-1] == "crab: interrupted", terminal.text()
    session_id = site.only_session()
    wait_for(lambda: tool_results(site, session_id) == [[INTERRUPTED]], "the call's interrupted result")
    wait_for(
        lambda: '"status": "WORKFLOW_EXECUTION_STATUS_COMPLETED"' in _describe(site, f"crab-session-{session_id}"),
        "the end",
    )
    assert not marker.exists()


def test_ask_user_on_a_worker_asks_the_user_at_the_client(site: Site):
    site.write_script(
        [
            [{"tool": "ask_user", "args": {"question": "Which colour?", "choices": ["red", "blue"]}}],
            [{"text": "noted"}],
        ]
    )
    site.start_worker("a", yolo=False, plugins=ASKING)
    terminal = Terminal(site, "-o", "json", "paint it")
    try:
        terminal.wait_for("answer> ")
        assert "Which colour?" in terminal.text() and "blue" in terminal.text()
        terminal.type("2\r")
        assert terminal.finish() == 0, terminal.text()
    finally:
        terminal.kill()
    doc = json.loads(terminal.stdout.read_text())
    assert doc["text"] == "noted"
    assert tool_results(site, doc["session_id"]) == [["The user chose: blue"]]


def test_a_typed_answer_with_a_secret_travels_masked(site: Site):
    # The user's free-text answer is the ``answer`` update's argument, kept in Temporal's history:
    # a secret typed into it is masked before it travels, as the store masks the call's result.
    site.env["DEMO_API_KEY"] = SECRET
    site.write_script([[{"tool": "ask_user", "args": {"question": "Which key?"}}], [{"text": "noted"}]])
    site.start_worker("a", yolo=False, plugins=ASKING)
    terminal = Terminal(site, "-o", "json", "set it up")
    try:
        terminal.wait_for("answer> ")
        terminal.type(f"use {SECRET}\r")
        assert terminal.finish() == 0, terminal.text()
    finally:
        terminal.kill()
    doc = json.loads(terminal.stdout.read_text())
    assert tool_results(site, doc["session_id"]) == [["The user answered: use [redacted]"]]
    history = history_json(site, doc["session_id"])
    assert "use [redacted]" in payloads(history)
    assert SECRET not in history + payloads(history)


def test_ctrl_c_on_the_client_ends_the_tools_process_group_on_the_worker(site: Site):
    # The bash call's own child (a `sleep 300` in the background) is gone after Ctrl-C, not only
    # the shell: the abort reaches the call's whole process group; the call has its one result.
    pidfile = site.root / "child.pid"
    command = f"sleep 300 & echo $! > {pidfile}; wait"
    site.write_script([[{"tool": "bash", "args": {"command": command}}], [{"text": "never"}]])
    site.start_worker("a")
    running = site.start_run("wait a long time")
    try:
        child = int(wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), "the child to start"))
        assert process_alive(child)
        running.send_signal(signal.SIGINT)
        _, stderr = running.communicate(timeout=DEADLINE)
    finally:
        if running.poll() is None:
            os.killpg(running.pid, signal.SIGKILL)
    assert running.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    wait_for(lambda: not process_alive(child), "the tool's child process to end")
    session_id = site.only_session()  # settled on the worker, maybe after the client's end
    wait_for(lambda: tool_results(site, session_id) == [[INTERRUPTED]], "the call's interrupted result")


def _describe(site: Site, workflow: str) -> str:
    return temporal(site, "workflow", "describe", "-w", workflow, "-o", "json").stdout
