"""``crab serve http`` in a subprocess on 127.0.0.1, with a scripted echo provider, and clients.

The provider is ``crab.testing.ScriptedProvider`` behind a reply function (the shape
crab-telegram's tests use): it echoes, waits, streams slowly, or calls the ``jot`` (write),
``peek`` (read) or ``choose`` (asks a tool's question) tool depending on the message. Every
request the provider gets is appended to
``$CRAB_HOME/requests.jsonl``, so a test can see that a refused request never reached the model,
and every session that ends (``crab_session_end``) to ``$CRAB_HOME/ended``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

WAIT = 60.0

ECHO_PLUGIN = '''
"""An echo provider for crab-http's tests, a write tool ``jot``, a read tool ``peek``, ``choose`` (asks)."""
import json, os

import crab
from crab.testing import ScriptedProvider


def reply(request):
    log = os.environ.get("HTTP_TEST_REQUEST_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write(json.dumps([crab.messages.message_to_dict(m) for m in request.messages]) + "\\n")
    last = request.messages[-1]
    users = [m for m in request.messages if m.role == "user"]
    text = users[-1].content if isinstance(users[-1].content, str) else str(users[-1].content)
    if last.role == "tool":
        return [{"text": f"{last.name} said: {last.content}"}]
    if text.startswith("slow"):
        return [step for i in range(40) for step in ({"delay": 0.25}, {"text": f"part {i}. "})]
    if text.startswith("fail"):
        return [{"error": "the model's server is down", "kind": "invalid_request"}]
    if text.startswith("wait"):
        return [{"delay": 0.3}, {"text": f"waited: {text}"}]
    if text.startswith("jot"):
        return [{"text": "Writing it down."}, {"tool": "jot", "args": {"note": text[4:]}}]
    if text.startswith("peek"):
        return [{"tool": "peek", "args": {"what": text[5:]}}]
    if text.startswith("choose"):
        return [{"tool": "choose", "args": {"what": text[7:]}}]
    return [{"text": f"echo: {text} ({len(users)} user messages)"}]


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


@crab.tool(permission="write")
def jot(note: str) -> str:
    """Write a note."""
    return f"noted {note}"


@crab.tool
def peek(what: str) -> str:
    """Look at something."""
    return f"saw {what}"


@crab.tool
async def choose(what: str, ctx: crab.ToolContext) -> str:
    """Ask the user to pick (a tool's question, as crab-plan's approval is)."""
    if ctx.question is None:
        return "nobody can answer"
    answer = await ctx.question(crab.Question(f"Which {what}?", ("red", "blue"), free_text=False))
    return f"picked {answer}"


@crab.hookimpl
def crab_providers(config):
    return [Echo()]


@crab.hookimpl
def crab_tools(config):
    return [jot, peek, choose]


@crab.hookimpl
def crab_session_end(session_id, reason):
    log = os.environ.get("HTTP_TEST_ENDED")
    if log:
        with open(log, "a") as handle:
            handle.write(f"{session_id} {reason}\\n")
'''


def crab_command(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crab", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=WAIT
    )


@dataclass
class Home:
    """A CRAB_HOME with the echo plugin, and the environment for ``crab`` subprocesses in it."""

    root: Path
    env: dict[str, str]
    work: Path

    @property
    def path(self) -> Path:
        return Path(self.env["CRAB_HOME"])

    def configure(self, text: str) -> None:
        (self.path / "config.toml").write_text(text)

    def crab(self, *args: str) -> subprocess.CompletedProcess[str]:
        return crab_command(*args, env=self.env, cwd=self.work)

    def token(self, name: str) -> str:
        done = self.crab("http", "token", "create", name)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def requests(self) -> list[Any]:
        log = self.path / "requests.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def make_home(root: Path) -> Home:
    site = root / "site"
    site.mkdir(parents=True)
    (site / "crab_http_echo.py").write_text(ECHO_PLUGIN)
    dist = site / "crab_http_echo-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crab-http-echo\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[crab]\nhttp-echo = crab_http_echo\n")
    home = root / "home"
    home.mkdir()
    (home / "config.toml").write_text("[plugins.http]\nport = 0\nrate_limit = 100000\n")
    work = root / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "OPENAI_"))}
    env.update(
        PYTHONPATH=str(site),
        CRAB_HOME=str(home),
        CRAB_PLUGINS="http,http-echo",
        HTTP_TEST_REQUEST_LOG=str(home / "requests.jsonl"),
        HTTP_TEST_ENDED=str(home / "ended"),
    )
    return Home(root, env, work)


@dataclass
class Served:
    """A running ``crab serve http``; ``url`` is its base URL, ``lines`` its stderr so far."""

    proc: subprocess.Popen[str]
    url: str = ""
    lines: list[str] = field(default_factory=list)
    stdout: str = ""
    reader: threading.Thread | None = None

    def log(self) -> str:
        return "".join(self.lines)

    def wait_for_line(self, pattern: str) -> re.Match[str]:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            for line in list(self.lines):
                found = re.search(pattern, line)
                if found:
                    return found
            if self.proc.poll() is not None and not found:
                time.sleep(0.1)
                for line in list(self.lines):
                    if found := re.search(pattern, line):
                        return found
                raise AssertionError(f"crab ended ({self.proc.returncode}) before {pattern!r}: {self.log()}")
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {pattern!r}: {self.log()}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.stdout = self.proc.communicate(timeout=WAIT)[0]
        if self.reader is not None:
            self.reader.join(WAIT)  # every line of stderr is in ``lines`` before anyone reads them
        return self.proc.returncode


def start_serve(home: Home, *extra: str, listening: str = r"listening on (http://127\.0\.0\.1:\d+)/") -> Served:
    proc = subprocess.Popen(
        [sys.executable, "-m", "crab", "serve", "http", "-m", "echo/echo", *extra],
        env=home.env,
        cwd=home.work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    served = Served(proc)

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            served.lines.append(line)

    served.reader = threading.Thread(target=read, daemon=True)
    served.reader.start()
    served.url = served.wait_for_line(listening).group(1)
    return served


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return make_home(tmp_path)


@pytest.fixture
def serve(home: Home) -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(*extra: str, **options: str) -> Served:
        served = start_serve(home, *extra, **options)
        started.append(served)
        return served

    yield start
    for served in started:
        if served.proc.poll() is None:
            served.proc.kill()
            served.proc.communicate()


@dataclass
class Shared:
    """One server for the tests that need only a running server, and two tokens."""

    home: Home
    served: Served
    token: str
    other: str

    @property
    def url(self) -> str:
        return self.served.url

    def auth(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}


@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    home = make_home(tmp_path_factory.mktemp("shared"))
    token, other = home.token("laptop"), home.token("phone")
    served = start_serve(home)
    yield Shared(home, served, token, other)
    if served.proc.poll() is None:
        served.proc.kill()
        served.proc.communicate()


class SSEReader:
    """The JSON events of one SSE response, decoded by crab's own decoder (crab_provider_kit);
    ``read(stop)`` may be called again to go on where it stopped."""

    def __init__(self, response: Any) -> None:
        from crab_provider_kit import SSEDecoder

        self.decoder = SSEDecoder()
        self.chunks = response.iter_bytes()
        self.pending: list[dict[str, Any]] = []

    def read(self, stop: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        while True:
            while self.pending:
                events.append(self.pending.pop(0))
                if stop is not None and stop(events[-1]):
                    return events
            chunk = next(self.chunks, None)
            if chunk is None:
                self.decoder.flush()
                return events
            self.pending += [json.loads(e.data) for e in self.decoder.feed(chunk) if e.data != "[DONE]"]


@pytest.fixture
def sse() -> Callable[..., list[dict[str, Any]]]:
    """``sse(response, stop=None)``: the response's events up to the first ``stop`` accepts (else
    to its end); called again with the same response it goes on from there."""
    readers: dict[int, tuple[Any, SSEReader]] = {}

    def read(response: Any, stop: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
        if id(response) not in readers:
            readers[id(response)] = (response, SSEReader(response))
        return readers[id(response)][1].read(stop)

    return read
