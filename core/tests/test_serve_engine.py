"""``[serve] engine = NAME``: ``crab serve``'s channels hand each turn to the turn engine a plugin
offers (``crab_turn_engines``, the one ``crab run --engine`` uses), steering reaches the engine's
turn, an unknown name is one line and exit 2 naming those available, and a project's config
cannot choose where turns run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

WAIT = 60.0

ENGINE = '''"""A turn engine that carries out each step on the session as the store holds it then, and
hands steering to its turn as a remote engine does (``steering()``, then ``took_steering``)."""

import os

import crab
from crab import steps

CRAB_API = ">=0.1,<0.2"


async def stepwise(session, prompt, config):
    live, turn_id, taken = session, "e1", 0
    with open(os.environ["CRAB_FAKE_ENGINE_LOG"], "a") as log:
        log.write(f"{prompt}\\n")
    session.emit(crab.events.TurnStarted(session.session_id, turn_id, prompt))
    first = steps.Prompt(f"{turn_id}.p0", prompt)
    machine = steps.TurnMachine(
        session.session_id, turn_id, first, session.messages, steps.StepSettings(25)
    )
    await session.begin()
    step = machine.step
    while not isinstance(step, steps.EndTurn):
        if isinstance(step, steps.TakeSteering):
            fresh = live.steering()[taken:]
            answer = steps.Steered(
                tuple(steps.Prompt(f"{turn_id}.s{taken + n}", text) for n, text in enumerate(fresh))
            )
            taken += len(fresh)
        elif isinstance(step, steps.Accept):
            answer = steps.Done()
        else:
            session = await session.again()  # what the earlier steps stored, read back
            offered = step.prompt if isinstance(step, steps.Submit) else first
            answer = await session.carry_out(step, offered)
        step = machine.send(answer)
    live.took_steering(taken)
    session.emit(crab.events.TurnEnded(session.session_id, turn_id, step.stop, machine.text, None, step.error))
    return steps.TurnOutcome(step.stop, machine.text, error=step.error, turn_id=turn_id,
                             session_id=session.session_id, tool_calls=machine.tool_calls)


@crab.hookimpl
def crab_turn_engines():
    return {"stepwise": stepwise}
'''


class Served:
    def __init__(self, env: dict[str, str], folder: Path, work: Path, root: Path) -> None:
        self.env, self.folder, self.work, self.root = env, folder, work, root
        self.procs: list[subprocess.Popen[str]] = []

    def script(self, replies: list[Any]) -> str:
        path = self.root / f"script{len(self.procs)}.json"
        path.write_text(json.dumps({"replies": replies}))
        return f"scripted/{path}"

    def start(self, replies: list[Any], *args: str) -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "crab", "serve", "inbox", "-m", self.script(replies), *args]
        proc = subprocess.Popen(
            command, env=self.env, cwd=self.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.procs.append(proc)
        self.wait(self.folder / "ready", proc)
        return proc

    def run(self, replies: list[Any], *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "crab", "serve", "inbox", "-m", self.script(replies), *args]
        return subprocess.run(command, env=self.env, cwd=self.work, capture_output=True, text=True, timeout=120)

    def wait(self, path: Path, proc: subprocess.Popen[str]) -> None:
        deadline = time.monotonic() + WAIT
        while not (path.exists() and (path.suffix != ".out" or path.read_text())):
            if proc.poll() is not None:
                raise AssertionError(f"crab serve ended ({proc.returncode}): {proc.communicate()[1]}")
            assert time.monotonic() < deadline, f"timed out waiting for {path.name}"
            time.sleep(0.02)

    def answer(self, name: str, proc: subprocess.Popen[str]) -> dict[str, Any]:
        self.wait(self.folder / f"{name}.out", proc)
        return dict(json.loads((self.folder / f"{name}.out").read_text()))

    def engine_ran(self) -> list[str]:
        log = self.root / "engine.log"
        return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def served(fake_site, tmp_path: Path) -> Iterator[Served]:
    env = fake_site(["scripted", "inbox", "waiter"])
    site = Path(env["PYTHONPATH"])
    (site / "crab_fake_engine.py").write_text(ENGINE)
    dist = site / "crab_fake_engine-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crab-fake-engine\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[crab]\nengine = crab_fake_engine\n")
    env["CRAB_PLUGINS"] = "scripted,inbox,waiter,engine"
    folder, work = tmp_path / "inbox", tmp_path / "work"
    folder.mkdir()
    work.mkdir()
    env["CRAB_FAKE_INBOX_DIR"] = str(folder)
    env["CRAB_FAKE_ENGINE_LOG"] = str(tmp_path / "engine.log")
    home = Path(env["CRAB_HOME"])
    home.mkdir(exist_ok=True)
    found = Served(env, folder, work, tmp_path)
    yield found
    for proc in found.procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    _, stderr = proc.communicate(timeout=WAIT)
    assert proc.returncode == 0, stderr
    return stderr


def test_a_channels_turns_run_on_the_engine_serve_engine_names(served: Served):
    (Path(served.env["CRAB_HOME"]) / "config.toml").write_text('[serve]\nengine = "stepwise"\n')
    replies = [[{"text": "first answer"}], [{"text": "second answer"}]]
    proc = served.start(replies)
    (served.folder / "alice.1.in").write_text("hello")
    first = served.answer("alice.1", proc)
    (served.folder / "alice.2.in").write_text("again")
    second = served.answer("alice.2", proc)
    assert (first["stop"], first["text"], second["text"]) == ("end", "first answer", "second answer")
    assert first["session"] == second["session"]
    assert second["roles"] == ["user", "assistant", "user", "assistant"]
    assert served.engine_ran() == ["hello", "again"]
    assert "Traceback" not in stop(proc)


def test_steering_sent_while_the_engines_turn_runs_joins_that_turn(served: Served):
    go = served.root / "go"
    replies = [[{"tool": "wait_for", "args": {"name": str(go)}}], [{"text": "took both"}]]
    proc = served.start(replies, "--set", "serve.engine=stepwise")
    (served.folder / "bob.1.in").write_text("bg:start")
    served.wait(served.folder / "bob.1.queued", proc)
    (served.folder / "bob.2.in").write_text("steer:and this too")
    served.wait(served.folder / "bob.2.queued", proc)
    go.touch()
    turn, steering = served.answer("bob.1", proc), served.answer("bob.2", proc)
    assert (turn["stop"], turn["text"]) == ("end", "took both")
    assert (steering["stop"], steering["text"]) == ("end", "took both")  # answered by the turn it joined
    assert turn["roles"] == ["user", "assistant", "tool", "user", "assistant"]
    assert served.engine_ran() == ["start"]  # one turn: the steering did not start another
    stop(proc)


def test_an_unknown_engine_is_one_line_and_exit_2_naming_those_available(served: Served):
    result = served.run([], "--set", "serve.engine=nope")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "crab: [serve] engine: no turn engine 'nope': the engines available are stepwise"
    ]


def test_a_project_cannot_choose_where_turns_run(served: Served):
    # A repository's config must not send its sessions elsewhere: [serve] engine is trust-only.
    project = served.work / ".crab"
    project.mkdir()
    (project / "config.toml").write_text('[serve]\nengine = "stepwise"\n')
    proc = served.start([[{"text": "here"}]])
    (served.folder / "carol.1.in").write_text("hello")
    assert served.answer("carol.1", proc)["text"] == "here"
    assert served.engine_ran() == []  # the turn ran in this process
    assert "serve.engine" in stop(proc)  # the ignored trust-only key is named
