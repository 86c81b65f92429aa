"""Fixtures of crab-acp's tests: the real ``crab acp`` (``python -m crab acp``) in a subprocess,
driven by the ACP SDK's own client side (``acp.spawn_agent_process``), with a scripted provider
and test tools (``fake_site``) in a test HOME; ``Editor`` plays the editor: it records every
update, answers permission questions as told, serves files and runs terminals for real.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from crab.testing import process_alive as alive

FAKE_SITE = Path(__file__).parent / "fake_site"
ACPX = Path(__file__).parent / "acpx"
FAKES = {"scripted": "crab_acp_fake_scripted", "acptools": "crab_acp_fake_tools", "filestore": "crab_acp_fake_store"}
WAIT = 60.0


def wait_until(check: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def wait_for(check: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def processes_with(marker: str) -> list[int]:
    """Live (not zombie) pids whose command line holds ``marker``, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if marker in line and state != "Z":
                found.append(int(entry.name))
    return found


class Editor:
    """The client side: what an editor does, recorded."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.updates: list[tuple[str, Any]] = []
        self.questions: list[Any] = []
        self.answers: list[str] = []
        """Answers to give, in order: an option id ("once", "always", "deny") or "cancelled"."""
        self.asked = asyncio.Event()
        self.buffers: dict[str, str] = {}
        """Unsaved editor buffers by path: read_text_file answers these before the disk."""
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.terminals: dict[str, subprocess.Popen[bytes]] = {}
        self.terminal_log: list[tuple[str, str]] = []
        self.hold_question = False

    def of(self, kind: str) -> list[Any]:
        return [u for _, u in self.updates if getattr(u, "session_update", None) == kind]

    def text(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk"))

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        self.questions.append((tool_call, options))
        self.asked.set()
        if self.hold_question:
            await asyncio.sleep(3600)  # the user looks away; cancel must still end the turn
        choice = self.answers.pop(0) if self.answers else "deny"
        if choice.startswith("option:"):  # pick the option of that name (a question's choice)
            choice = next(o.option_id for o in options if o.name == choice.removeprefix("option:"))
        if choice == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=choice, outcome="selected"))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kw: Any
    ) -> Any:
        self.reads.append(path)
        text = self.buffers.get(path)
        if text is None:
            text = Path(path).read_text()
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: Any = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kw: Any,
    ) -> Any:
        terminal = f"term-{len(self.terminals) + 1}"
        extra = {item.name: item.value for item in env or []}
        self.terminal_log.append((terminal, " ".join([command, *(args or [])])))
        self.terminals[terminal] = subprocess.Popen(
            [command, *(args or [])],
            cwd=cwd,
            env={**os.environ, **extra},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return CreateTerminalResponse(terminal_id=terminal)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        process = self.terminals[terminal_id]
        code = await asyncio.to_thread(process.wait)
        return WaitForTerminalExitResponse(
            exit_code=code if code >= 0 else None, signal=None if code >= 0 else str(-code)
        )

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        process = self.terminals[terminal_id]
        out = process.stdout.read().decode() if process.poll() is not None and process.stdout else ""
        code = process.poll()
        status = (
            None
            if code is None
            else TerminalExitStatus(exit_code=code if code >= 0 else None, signal=None if code >= 0 else str(-code))
        )
        return TerminalOutputResponse(output=out, truncated=False, exit_status=status)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.terminal_log.append((terminal_id, "kill"))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.terminals[terminal_id].pid, signal.SIGKILL)
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.terminal_log.append((terminal_id, "release"))
        return ReleaseTerminalResponse()

    def close(self) -> None:
        for process in self.terminals.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


class Crab:
    """``crab acp`` with the scripted provider and the test tools, in a test HOME."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.crab_home = self.home / ".crab"
        self.work = root / "work"
        for folder in (self.crab_home, self.work):
            folder.mkdir(parents=True, exist_ok=True)
        site = root / "site"
        site.mkdir(exist_ok=True)
        for name, module in FAKES.items():
            shutil.copy(FAKE_SITE / f"{module}.py", site / f"{module}.py")
            dist = site / f"{module}-0.0.1.dist-info"
            dist.mkdir(exist_ok=True)
            (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.0.1\n")
            (dist / "entry_points.txt").write_text(f"[crab]\n{name} = {module}\n")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
        self.env.update(
            PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
            HOME=str(self.home),
            CRAB_HOME=str(self.crab_home),
            CRAB_PLUGINS="scripted,acptools,filestore,acp",
            ACP_TEST_SCRIPTS=str(root),  # the scripted provider lists these scripts as its models
            NO_COLOR="1",
        )
        self._scripts = 0

    def script(self, *replies: list[dict[str, Any]], stream_calls: bool = True) -> str:
        """A script file as a model id; ``stream_calls=False``: its calls come only with each reply's end."""
        self._scripts += 1
        path = self.root / f"script{self._scripts}.json"
        path.write_text(json.dumps({"replies": list(replies), "stream_calls": stream_calls}))
        return f"scripted/{path}"

    def argv(self, model: str, *extra: str) -> list[str]:
        return ["-m", "crab", "acp", "-m", model, *extra]

    @contextlib.asynccontextmanager
    async def connect(self, model: str, editor: Editor, *extra: str) -> AsyncIterator[tuple[Any, Any]]:
        async with acp.spawn_agent_process(
            lambda _agent: editor,
            sys.executable,
            *self.argv(model, *extra),
            env=self.env,
            cwd=self.work,
            transport_kwargs={"shutdown_timeout": WAIT},  # a loaded machine may need more than the SDK's 2 s
        ) as (conn, process):
            try:
                yield conn, process
            finally:
                editor.close()

    capabilities = staticmethod(lambda fs=False, terminal=False: capabilities(fs, terminal))
    run = staticmethod(lambda coro, timeout=WAIT * 2: run(coro, timeout))
    wait_for = staticmethod(lambda check, what, timeout=WAIT: wait_for(check, what, timeout))
    wait_until = staticmethod(lambda check, what, timeout=WAIT: wait_until(check, what, timeout))
    processes_with = staticmethod(lambda marker: processes_with(marker))
    alive = staticmethod(lambda pid: alive(pid))

    def log(self) -> str:
        path = self.crab_home / "logs" / "acp.log"
        return path.read_text() if path.exists() else ""


def capabilities(fs: bool = False, terminal: bool = False) -> ClientCapabilities:
    return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=terminal)


def run(coro: Any, timeout: float = WAIT * 2) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


def _acpx() -> Path | str:
    """acpx's command, installed with ``npm install`` from the committed lockfile into a cache folder
    keyed by its hash (``$CRAB_ACP_NPM_CACHE``, else ``~/.cache/crab-tests``), or why there is none."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return "node/npm not installed (apt-get install nodejs npm)"
    key = hashlib.sha256((ACPX / "package-lock.json").read_bytes() + (ACPX / "package.json").read_bytes()).hexdigest()
    base = Path(os.environ.get("CRAB_ACP_NPM_CACHE") or Path.home() / ".cache" / "crab-tests")
    folder = base / f"acpx-{key[:16]}"
    command = folder / "node_modules" / ".bin" / "acpx"
    if command.exists():
        return command
    base.mkdir(parents=True, exist_ok=True)
    with open(base / f"acpx-{key[:16]}.lock", "w") as lock:  # xdist workers share the cache: one installs
        fcntl.flock(lock, fcntl.LOCK_EX)
        if command.exists():
            return command
        folder.mkdir(exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(ACPX / name, folder / name)
        done = subprocess.run(
            # npm ci refuses this lockfile (it lists acpx's optional per-platform packages unresolved, an npm
            # quirk), so install: acpx is pinned exactly and the lockfile still pins the rest.
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=600,
        )
    if done.returncode != 0 or not command.exists():
        return "npm install of acpx failed: " + ((done.stderr.strip().splitlines() or ["no output"])[-1])
    return command


@pytest.fixture(scope="session")
def acpx() -> Path:
    """acpx, a headless ACP client from npm (or a skip saying why it cannot be had)."""
    found = _acpx()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture
def crab_acp(tmp_path: Path) -> Crab:
    return Crab(tmp_path)


@pytest.fixture
def editor(tmp_path: Path) -> Editor:
    return Editor(tmp_path)
