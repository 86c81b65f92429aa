"""What crab-temporal's ``crab serve`` tests drive: a real ``crab serve http`` whose turns run on
real ``crab worker`` processes (``[serve] engine = "temporal"``), clients over real HTTP on
127.0.0.1, and a provider whose replies follow the conversation it is given (so any worker may
make any model call): a prompt ``run: COMMAND`` gets a ``bash`` call of COMMAND, then
``done: <the tool's first line of output>``; other text (steering) ``heard: TEXT``. Its channel
``files`` sends a message as steering (``handle_input(..., steer=True)``), which HTTP does not."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from temporal_site import DEADLINE, Site, Worker, wait_for

PLUGINS = "serve-echo,store-sqlite,tools-basic,temporal"
MODEL = "echo/echo"

ECHO_PLUGIN = '''
"""A provider for crab-temporal's serve tests whose reply follows the conversation it is given,
and a channel of files that can steer."""
import asyncio, json, os, re
from pathlib import Path

import crab
from crab.testing import ScriptedProvider


def reply(request):
    said = [m for m in request.messages if not (m.role == "user" and str(m.content).startswith("[crab]"))]
    last = said[-1]
    content = re.sub(r"^\\[scheduled job \\S+\\] ", "", str(last.content))  # crab-schedule's prefix
    if last.role == "tool":
        first = str(last.content).splitlines()[0] if str(last.content) else ""
        return [{"text": f"done: {first}"}]
    if not content.startswith("run: "):  # steering that joined the turn
        return [{"text": f"heard: {content}"}]
    command = content[5:]
    return [{"text": f"running {command}"}, {"tool": "bash", "args": {"command": command}}]


class Files:
    """A channel of files (``$FILES_CHANNEL_DIR/<address>.<n>.in``; ``steer:TEXT`` steers the
    address's running turn), each answered in ``<address>.<n>.out`` with the outcome."""

    name = "files"
    local = False

    def __init__(self):
        self.stopping, self.tasks = False, set()

    async def run(self, agent):
        folder = Path(os.environ["FILES_CHANNEL_DIR"])
        (folder / "ready").write_text("")
        while not self.stopping:
            for path in sorted(folder.glob("*.in")):
                address, text = path.name.split(".", 1)[0], path.read_text()
                path.rename(path.with_suffix(".taken"))
                session = await agent.session_for("files", address)
                path.with_suffix(".started").write_text(session.id)
                steer = text.startswith("steer:")
                task = asyncio.create_task(self.answer(agent, session, text[6:] if steer else text, steer, path))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
                await asyncio.sleep(0)  # its first step queues the input
                path.with_suffix(".queued").write_text("")
            await asyncio.sleep(0.05)
        await asyncio.gather(*self.tasks)

    async def answer(self, agent, session, text, steer, path):
        outcome = await agent.handle_input(session, text, steer=steer)
        path.with_suffix(".out").write_text(json.dumps({"stop": outcome.stop, "text": outcome.text}))

    async def stop(self):
        self.stopping = True


@crab.hookimpl
def crab_channels(config):
    return [Files()]


class Echo:
    name = "echo"

    def __init__(self):
        self.engine = ScriptedProvider(reply)

    def models(self):
        return [crab.ModelInfo(id="echo", provider="echo")]

    def check(self, model):
        return None

    def stream(self, request):
        return self.engine.stream(request)


@crab.hookimpl
def crab_providers(config):
    return [Echo()]
'''


def install_echo(site: Site) -> None:
    """The echo provider as an installed plugin (a dist-info and its entry point) on PYTHONPATH."""
    folder = site.root / "echo-site"
    folder.mkdir(exist_ok=True)
    (folder / "crab_serve_echo.py").write_text(ECHO_PLUGIN)
    dist = folder / "crab_serve_echo-0.0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crab-serve-echo\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[crab]\nserve-echo = crab_serve_echo\n")
    site.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), site.env.get("PYTHONPATH")]))


def configure(site: Site, store: str = "", engine: bool = True, yolo: bool = True) -> None:
    """The site's config with the HTTP channel on a free port, turns on Temporal (``engine``) and
    ``store`` (TOML lines) instead of its SQLite file when given."""
    config, first = site.root / "home" / "config.toml", site.root / "home" / "config.first"
    if not first.exists():
        first.write_text(config.read_text())
    text = first.read_text()  # configured afresh each time, from the site's own
    if store:
        text, count = re.subn(r'\[crab\]\nstore = "sqlite"\n\[plugins.store-sqlite\]\npath = [^\n]*\n', store, text)
        assert count == 1, text
    # Nobody at the HTTP clients answers permission questions: every tool call is allowed, in the
    # serving process (a turn run there) as on the workers (``--yolo``).
    if yolo:
        text = text.replace("[crab]\n", '[crab]\npermissions = "yolo"\n', 1)
    text += "[plugins.http]\nport = 0\nrate_limit = 100000\n"
    if engine:
        text += '[serve]\nengine = "temporal"\n'
    config.write_text(text)


def crab(site: Site, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crab", *args],
        cwd=site.workspace,
        env=site.env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def token(site: Site, name: str, plugins: str = PLUGINS) -> str:
    made = subprocess.run(
        [sys.executable, "-m", "crab", "http", "token", "create", name],
        cwd=site.workspace,
        env={**site.env, "CRAB_PLUGINS": f"http,{plugins}"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def start_worker(site: Site, name: str, plugins: str = PLUGINS, yolo: bool = True) -> Worker:
    """A ``crab worker`` on the echo provider, returned once it polls the task queue (``yolo``
    False: its tools ask the user, through the turn's client)."""
    log = site.root / f"worker-{name}.log"
    command = [sys.executable, "-m", "crab", "worker", "--plugins", plugins, "-m", MODEL]
    command += ["--yolo"] if yolo else []
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=site.workspace,
            env={**site.env, "WORKER_NAME": name},  # a tool's output can say where it ran
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    worker = Worker(name, process, log)
    site.workers.append(worker)
    wait_for(
        lambda: "crab worker: running turns" in log.read_text(errors="replace") or process.poll() is not None,
        f"worker {name} to start",
    )
    assert process.poll() is None, log.read_text(errors="replace")
    return worker


@dataclass
class Serve:
    """A running ``crab serve http``: ``url`` once it listens, ``lines`` its stderr so far."""

    process: subprocess.Popen[str]
    url: str = ""
    lines: list[str] = field(default_factory=list)

    def log(self) -> str:
        return "".join(self.lines)

    def stop(self) -> int:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(DEADLINE)
        return self.process.returncode


def start_serve(site: Site, plugins: str = PLUGINS, channel: str = "http") -> Serve:
    """``crab serve CHANNEL``, returned once it listens (``http``) or runs (``files``)."""
    command = [sys.executable, "-m", "crab", "serve", channel, "--plugins", f"http,{plugins}", "-m", MODEL]
    process = subprocess.Popen(
        command,
        cwd=site.workspace,
        env=site.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    serve = Serve(process)

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            serve.lines.append(line)

    threading.Thread(target=read, daemon=True).start()

    def listening() -> str | None:
        for line in list(serve.lines):
            if found := re.search(r"listening on (http://127\.0\.0\.1:\d+)/", line):
                return found.group(1)
        assert process.poll() is None, f"crab serve ended ({process.returncode}): {serve.log()}"
        return None

    if channel == "http":
        serve.url = wait_for(listening, "crab serve to listen")
    return serve


def session(url: str, key: str) -> str:
    with httpx.Client(timeout=DEADLINE) as client:
        made = client.post(f"{url}/v1/sessions", headers={"Authorization": f"Bearer {key}"}, json={})
        made.raise_for_status()
        return str(made.json()["id"])


def post(
    url: str,
    key: str,
    session_id: str,
    text: str,
    timeout: float = DEADLINE * 3,
    answer: Callable[[dict[str, Any]], str] | None = None,
) -> list[dict[str, Any]]:
    """One message to a session and every event of its turn's SSE stream, to its end; each
    ``permission_request`` answered with ``answer(event)`` on another connection."""
    events: list[dict[str, Any]] = []
    headers = {"Authorization": f"Bearer {key}"}
    address = f"{url}/v1/sessions/{session_id}/messages"
    with (
        httpx.Client(timeout=httpx.Timeout(timeout, connect=DEADLINE)) as client,
        client.stream("POST", address, headers=headers, json={"text": text}) as response,
    ):
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if answer is not None and events[-1]["type"] == "permission_request":
                    reply = {"answer": answer(events[-1])}
                    sent = client.post(
                        f"{url}/v1/sessions/{session_id}/permissions/{events[-1]['id']}", headers=headers, json=reply
                    )
                    assert sent.status_code == 200, sent.text
    return events


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """The events' kinds in order, consecutive text deltas as one (a stream's chunking is the provider's)."""
    shown: list[str] = []
    for event in events:
        kind = str(event["type"])
        if not (shown and kind == shown[-1] == "text_delta"):
            shown.append(kind)
    return shown


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(str(e.get("text", "")) for e in events if e["type"] == "text_delta")


def exported(site: Site, session_id: str, plugins: str = PLUGINS) -> list[dict[str, Any]]:
    done = crab(site, "sessions", "export", session_id, "--plugins", plugins)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()[1:]]


def conversation(entries: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(role, text) of the session's messages and results, date notes left out."""
    found = []
    for entry in entries:
        payload = entry["payload"]
        if entry["type"] in ("message", "tool_result") and not str(payload.get("content")).startswith("[crab]"):
            found.append((str(payload["role"]), str(payload.get("content"))))
    return found


def results_per_call(entries: list[dict[str, Any]]) -> dict[str, int]:
    calls: dict[str, int] = {}
    for entry in entries:
        payload = entry["payload"]
        if entry["type"] == "message" and payload.get("role") == "assistant":
            for call in payload.get("tool_calls", []):
                calls[call["id"]] = 0
        elif entry["type"] == "tool_result":
            calls[payload["call_id"]] = calls.get(payload["call_id"], 0) + 1
    return calls
