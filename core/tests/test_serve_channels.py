"""``crab serve`` with several channels: isolation and restart, keyed sessions, delivery, drain."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from crab._assembly.channel_host import ChannelError, ChannelHost
from crab._builtin.memory_store import MemoryStore
from crab._contracts.interception import PermissionRequest
from crab._loop.sessions import ADDRESS_META, CHANNEL_META
from crab.testing import AgentHarness

WAIT = 60.0


def wait_for(path: Path, what: str, proc: subprocess.Popen[str] | None = None) -> Path:
    deadline = time.monotonic() + WAIT
    while not path.exists():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"crab serve ended ({proc.returncode}) before {what}: {proc.stderr.read()}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
    return path


def answer(folder: Path, name: str, proc: subprocess.Popen[str]) -> dict[str, Any]:
    out = wait_for(folder / f"{name}.out", f"the answer to {name}", proc)
    for _ in range(100):
        text = out.read_text()
        if text:
            return dict(json.loads(text))
        time.sleep(0.02)
    raise AssertionError(f"{out} stayed empty")


@pytest.fixture
def served(fake_site, tmp_path: Path):
    """``served(args, replies)`` starts ``crab serve ARGS`` on the fake inbox channels."""
    env = fake_site(["scripted", "inbox"])
    env["CRAB_PLUGINS"] = "scripted,inbox"
    folder = tmp_path / "inbox"
    folder.mkdir()
    env["CRAB_FAKE_INBOX_DIR"] = str(folder)
    work = tmp_path / "work"
    work.mkdir()
    started: list[subprocess.Popen[str]] = []

    def start(args: list[str], replies: list[Any]) -> tuple[subprocess.Popen[str], Path]:
        script = tmp_path / f"script{len(started)}.json"
        script.write_text(json.dumps({"replies": replies}))
        proc = subprocess.Popen(
            [sys.executable, "-m", "crab", "serve", *args, "-m", f"scripted/{script}"],
            env=env,
            cwd=work,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        return proc, folder

    empty = tmp_path / "empty.json"
    empty.write_text('{"replies": []}')
    start.model = f"scripted/{empty}"  # type: ignore[attr-defined]
    start.env = env  # type: ignore[attr-defined]
    start.work = work  # type: ignore[attr-defined]
    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def stop(proc: subprocess.Popen[str]) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=WAIT)
    return proc.returncode, stderr


def test_a_channel_that_crashes_is_restarted_and_the_other_keeps_answering(served):
    replies = [[{"text": "first answer"}], [{"text": "second answer"}], [{"text": "other chat"}]]
    proc, folder = served(["inbox", "crashy", "--set", "serve.restart_delay=0.05"], replies)
    wait_for(folder / "ready", "the inbox channel", proc)
    (folder / "alice.1.in").write_text("hello")
    first = answer(folder, "alice.1", proc)
    (folder / "alice.2.in").write_text("again")
    second = answer(folder, "alice.2", proc)
    (folder / "bob.1.in").write_text("hi")
    other = answer(folder, "bob.1", proc)
    assert (first["text"], second["text"], other["text"]) == ("first answer", "second answer", "other chat")
    # one session per address, kept across messages; another address gets its own
    assert first["session"] == second["session"] != other["session"]
    assert second["roles"] == ["user", "assistant", "user", "assistant"]
    deadline = time.monotonic() + WAIT
    while len((folder / "crashy.starts").read_text()) < 3:  # restarted with backoff, again and again
        assert time.monotonic() < deadline, "crashy was not restarted"
        time.sleep(0.05)
    code, stderr = stop(proc)
    assert code == 0, stderr
    assert "channel crashy failed: RuntimeError: crashy broke on start; restarting in 0.05s" in stderr
    assert "restarting in 0.1s" in stderr  # the wait doubles
    assert "Traceback" not in stderr


def test_delivery_reaches_a_running_channel_and_says_why_it_cannot(served):
    proc, folder = served(["inbox", "crashy", "--set", "serve.restart_delay=30"], [])
    wait_for(folder / "ready", "the inbox channel", proc)
    (folder / "x.1.in").write_text("deliver inbox carol standup in five")
    assert answer(folder, "x.1", proc) == {"delivered": True}
    assert (folder / "carol.delivered").read_text() == "standup in five\n"
    (folder / "x.2.in").write_text("deliver nope carol hello")
    unknown = answer(folder, "x.2", proc)["error"]
    assert "no channel named 'nope' runs in this crab serve (running: crashy, inbox)" in unknown
    (folder / "x.3.in").write_text("deliver crashy carol hello")
    assert answer(folder, "x.3", proc)["error"] == "channel 'crashy' cannot deliver messages"
    assert stop(proc)[0] == 0


def test_sigterm_mid_turn_lets_the_turn_finish_and_exits_0(served):
    replies = [[{"delay": 1.5}, {"text": "finished after all"}]]
    proc, folder = served(["inbox"], replies)
    wait_for(folder / "ready", "the inbox channel", proc)
    (folder / "dana.1.in").write_text("take your time")
    wait_for(folder / "dana.1.started", "the turn to start", proc)
    code, stderr = stop(proc)
    assert code == 0, stderr
    assert "stopping: waiting up to 30s for 1 running turn" in stderr
    done = json.loads((folder / "dana.1.out").read_text())
    assert (done["stop"], done["text"]) == ("end", "finished after all")
    assert done["roles"] == ["user", "assistant"]  # the stored session is whole


def test_after_the_grace_period_the_turn_is_aborted_and_crab_still_exits_0(served):
    proc, folder = served(["inbox", "--set", "serve.grace_seconds=0.2"], [[{"delay": 60}, {"text": "never"}]])
    wait_for(folder / "ready", "the inbox channel", proc)
    (folder / "eve.1.in").write_text("slow")
    wait_for(folder / "eve.1.started", "the turn to start", proc)
    code, stderr = stop(proc)
    assert code == 0, stderr
    assert "grace period over: aborting 1 running turn" in stderr
    assert not (folder / "eve.1.out").exists()


def test_a_second_signal_stops_at_once(served):
    proc, folder = served(["inbox"], [[{"delay": 60}, {"text": "never"}]])
    wait_for(folder / "ready", "the inbox channel", proc)
    (folder / "gus.1.in").write_text("slow")
    wait_for(folder / "gus.1.started", "the turn to start", proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.stderr is not None
    seen = ""
    while "stopping: waiting up to 30s" not in seen:  # the drain has begun
        line = proc.stderr.readline()
        assert line, f"crab serve ended without draining: {seen}"
        seen += line
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=WAIT)
    assert proc.returncode == 128 + signal.SIGTERM
    assert not (folder / "gus.1.out").exists()


def test_serve_without_names_runs_the_configured_channels(served, crab_run, tmp_path):
    env = served.env
    home = Path(env["CRAB_HOME"])
    none = crab_run(["serve", "-m", served.model], env, cwd=served.work)
    assert none.returncode == 2
    assert "no channel to serve: name one" in none.stderr
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text('[serve]\nchannels = ["inbox"]\n')
    proc, folder = served([], [[{"text": "configured"}]])
    wait_for(folder / "ready", "the configured inbox channel", proc)
    (folder / "f.1.in").write_text("hi")
    assert answer(folder, "f.1", proc)["text"] == "configured"
    assert stop(proc)[0] == 0


def test_a_project_cannot_enable_channels(served, crab_run):
    project = served.work / ".crab"
    project.mkdir()
    (project / "config.toml").write_text('[serve]\nchannels = ["inbox"]\n')
    result = crab_run(["serve", "-m", served.model], served.env, cwd=served.work)
    assert result.returncode == 2
    assert "no channel to serve" in result.stderr
    assert "serve.channels" in result.stderr  # the ignored trust-only key is named


def test_a_channel_that_cannot_start_exits_2_with_its_line(served, crab_run):
    result = crab_run(["serve", "inbox", "unready", "-m", served.model], served.env, cwd=served.work)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == "crab: unready: no token found: set UNREADY_TOKEN"


# --- in process: keyed sessions and asking through the channel ------------------------------------


class Asker:
    name = "asker"
    local = False

    def __init__(self) -> None:
        self.asked: list[tuple[str, PermissionRequest]] = []

    async def run(self, agent: Any) -> None:
        await asyncio.sleep(3600)

    async def ask(self, address: str, request: PermissionRequest) -> str:
        self.asked.append((address, request))
        return "once"


def test_keyed_sessions_are_found_again_by_a_new_process(tmp_path: Path) -> None:
    store = MemoryStore()
    first = AgentHarness([[{"text": "one"}]], store=store, workspace=tmp_path)
    host = ChannelHost(first.agent, {})
    session = first.run_async(host.session_for("chat", "42"))
    assert session.info.meta == {CHANNEL_META: "chat", ADDRESS_META: "42"}
    assert first.run_async(host.session_for("chat", "42")) is session  # kept live
    first.run_async(first.agent.handle_input(session, "hi"))
    first.close()
    second = AgentHarness([], store=store, workspace=tmp_path)
    again = second.run_async(ChannelHost(second.agent, {}).session_for("chat", "42"))
    assert again.id == session.id
    assert [m.role for m in again.messages] == ["user", "assistant"]
    other = second.run_async(ChannelHost(second.agent, {}).session_for("chat", "43"))
    assert other.id != session.id
    second.close()


def test_the_gate_asks_through_the_channel_that_owns_the_session(tmp_path: Path) -> None:
    import crab

    @crab.tool(permission="write")
    def touch(name: str) -> str:
        """Make a file."""
        return f"made {name}"

    class Tools:
        @crab.hookimpl
        def crab_tools(self, config: Any) -> list[Any]:
            return [touch]

    asker = Asker()
    replies = [
        [{"tool": "touch", "args": {"name": "a"}}],
        [{"text": "done"}],
        [{"tool": "touch", "args": {"name": "b"}}],
        [{"text": "no"}],
    ]
    harness = AgentHarness(replies, plugins={"tools": Tools()}, workspace=tmp_path, local=False)
    host = ChannelHost(harness.agent, {"asker": asker, "mute": Crashless()})
    session = harness.run_async(host.session_for("asker", "7"))
    outcome = harness.run_async(harness.agent.handle_input(session, "make a"))
    assert outcome.text == "done"
    assert [(a, r.tool) for a, r in asker.asked] == [("7", "touch")]
    muted = harness.run_async(host.session_for("mute", "7"))
    harness.run_async(harness.agent.handle_input(muted, "make b"))
    results = [m for m in muted.messages if m.role == "tool"]
    assert "cannot ask the user" in results[0].content  # a channel without ask: the gate refuses
    harness.close()


class Crashless:
    name = "mute"
    local = False

    async def run(self, agent: Any) -> None:
        await asyncio.sleep(3600)


def test_delivery_outside_crab_serve_is_a_clear_error(tmp_path: Path) -> None:

    harness = AgentHarness([], workspace=tmp_path)
    with pytest.raises(ChannelError, match="channels run only inside `crab serve`"):
        harness.run_async(harness.handle.deliver("telegram", "1", "hi"))
    harness.close()


def test_a_listener_can_follow_one_session_only(tmp_path: Path) -> None:
    from crab._contracts.events import TextDelta

    harness = AgentHarness([[{"text": "for one"}], [{"text": "for two"}]], workspace=tmp_path)
    handle = harness.handle
    one = harness.run_async(handle.session_for("chat", "1"))
    two = harness.run_async(handle.session_for("chat", "2"))
    seen: list[str] = []
    unsubscribe = handle.subscribe(lambda e: seen.append(e.text) if isinstance(e, TextDelta) else None, session=one)
    harness.run_async(handle.handle_input(one, "hi"))
    harness.run_async(handle.handle_input(two, "hi"))
    assert seen == ["for one"]
    unsubscribe()
    assert harness.agent.delivery._session_listeners == {}


def test_drain_stops_channels_without_deliver_first_so_their_last_work_is_delivered(tmp_path: Path) -> None:
    """A scheduler finishing a job during the drain still reaches the chat channel it sends to."""

    class Chat:
        name = "chat"
        local = False

        def __init__(self) -> None:
            self.stopped = asyncio.Event()
            self.got: list[str] = []

        async def run(self, agent: Any) -> None:
            await self.stopped.wait()

        async def stop(self) -> None:
            self.stopped.set()

        async def deliver(self, address: str, text: str) -> None:
            if self.stopped.is_set():
                raise ChannelError("chat is not connected")
            self.got.append(text)

    class Sender:
        name = "sender"
        local = False

        def __init__(self) -> None:
            self.stopping = asyncio.Event()
            self.error: str | None = None

        async def run(self, agent: Any) -> None:
            await self.stopping.wait()
            await asyncio.sleep(0.05)  # the job in hand finishes after stop() was asked
            try:
                await agent.deliver("chat", "1", "job done")
            except ChannelError as exc:
                self.error = str(exc)

        async def stop(self) -> None:
            self.stopping.set()

    harness = AgentHarness([], workspace=tmp_path, local=False)
    chat, sender = Chat(), Sender()
    host = ChannelHost(harness.agent, {"chat": chat, "sender": sender}, grace=10)

    async def scenario() -> None:
        running = asyncio.ensure_future(host.run())
        await asyncio.sleep(0.05)
        host.request_stop()
        await asyncio.wait_for(running, 10)

    harness.run_async(scenario())
    assert (chat.got, sender.error) == (["job done"], None)
    harness.close()


def test_serve_with_only_the_memory_store_warns_once_that_conversations_are_lost(served):
    from crab._cli.serve import MEMORY_ONLY

    proc, folder = served(["inbox"], [])
    wait_for(folder / "ready", "the inbox channel", proc)
    code, stderr = stop(proc)
    assert code == 0, stderr
    assert stderr.splitlines().count(f"warning: {MEMORY_ONLY}") == 1


def test_a_signal_while_the_agent_starts_stops_crab_serve(served, tmp_path: Path):
    """Nothing runs yet to drain: the first SIGTERM stops the start-up (it was ignored until the
    agent had started, minutes later with a slow server)."""
    served.env["CRAB_FAKE_SLOW_START"] = str(tmp_path)  # type: ignore[attr-defined]
    proc, _ = served(["inbox"], [])
    wait_for(tmp_path / "starting", "the slow start-up", proc)
    code, stderr = stop(proc)
    assert code == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr and "Timeout" not in stderr
