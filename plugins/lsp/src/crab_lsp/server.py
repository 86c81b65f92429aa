"""One language server process for one workspace: started through ``crab.processes`` (its own
process group, ended with crab, on Ctrl-C and at its timeout), initialized, told about the files
crab looks at, and asked. Its diagnostics, which the server pushes when it likes, are kept per
file with a count, so a caller can wait for the ones that follow its own change.

A server that exits, breaks the protocol or does not answer within ``timeout`` is ended and
marked down (``down``): ``Servers`` starts a new one on the next use.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from pathlib import Path
from typing import Any

from crab import processes

from crab_lsp.rpc import Connection, ConnectionLost, RequestFailed
from crab_lsp.settings import ServerSpec

GRACE = 1.0
"""Seconds between asking a server to shut down (or SIGTERM) and SIGKILL."""
STDERR_KEPT = 4096
"""Bytes of a server's stderr kept to say why it failed."""
LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".rs": "rust",
    ".go": "go",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".java": "java",
    ".rb": "ruby",
    ".sh": "shellscript",
}
"""LSP language ids by extension; another extension is its own id (``.lua``: ``lua``)."""

CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "didSave": True},
        "publishDiagnostics": {"versionSupport": True, "relatedInformation": False},
        "hover": {"contentFormat": ["plaintext", "markdown"]},
        "definition": {"linkSupport": False},
        "references": {},
        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
    },
    "workspace": {"workspaceFolders": True, "configuration": True},
    "window": {"workDoneProgress": False},
}
"""What crab's client can do: push diagnostics (never pull), plain locations, symbol trees."""


class ServerDown(Exception):
    """The server could not start, died, or did not answer in time."""


def language_of(path: Path, spec: ServerSpec) -> str:
    return spec.language or LANGUAGES.get(path.suffix.lower(), path.suffix.lstrip(".").lower() or "plaintext")


class LanguageServer:
    """A started server; ``down`` says why it cannot be used any more (None while it can)."""

    def __init__(self, spec: ServerSpec, workspace: Path, timeout: float) -> None:
        self.spec = spec
        self.workspace = workspace
        self.timeout = timeout
        self.down: str | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._tag = processes.new_tag()
        self._rpc: Connection | None = None
        self._stderr: deque[bytes] = deque()
        self._stderr_task: asyncio.Task[None] | None = None
        self._versions: dict[str, int] = {}  # uri -> version crab last sent
        self._texts: dict[str, str] = {}  # uri -> text crab last sent
        self.diagnostics: dict[str, list[dict[str, Any]]] = {}
        self._published: dict[str, int] = {}  # uri -> how many times diagnostics came
        self._waiters: set[asyncio.Future[None]] = set()  # woken by each publish and by the end

    # --- start and stop ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start and initialize the server within ``timeout``; raises ``ServerDown``."""
        try:
            self._process = await processes.start(
                [self.spec.command, *self.spec.args],
                self._tag,
                cwd=str(self.workspace),
                env=dict(os.environ),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            self.down = f"cannot start {self.spec.command!r}: {exc.strerror or exc}"
            raise ServerDown(self.down) from None
        assert self._process.stdout is not None
        assert self._process.stdin is not None
        self._stderr_task = asyncio.get_running_loop().create_task(self._drain(self._process.stderr))
        self._rpc = Connection(
            self._process.stdout, self._process.stdin, self._notified, self._asked, on_close=self._wake
        )
        root = self.workspace.resolve().as_uri()
        params = {
            "processId": os.getpid(),
            "clientInfo": {"name": "crab"},
            "rootUri": root,
            "rootPath": str(self.workspace),
            "workspaceFolders": [{"uri": root, "name": self.workspace.name}],
            "capabilities": CAPABILITIES,
        }
        await self.request("initialize", params)
        await self._notify("initialized", {})

    async def _drain(self, stream: asyncio.StreamReader | None) -> None:
        kept = 0
        while stream is not None and (chunk := await stream.read(65536)):
            self._stderr.append(chunk)
            kept += len(chunk)
            while kept > STDERR_KEPT and len(self._stderr) > 1:
                kept -= len(self._stderr.popleft())

    async def last_words(self) -> str:
        """The last line of a server that exited, once its stderr is read to the end (bounded)."""
        if self._stderr_task is not None and not self._stderr_task.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), GRACE * 4)
        return self.stderr_tail()

    def stderr_tail(self) -> str:
        text = b"".join(self._stderr)[-STDERR_KEPT:].decode("utf-8", "replace").strip()
        lines = [line for line in text.splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""

    @property
    def alive(self) -> bool:
        return (
            self.down is None
            and self._process is not None
            and self._process.returncode is None
            and self._rpc is not None
            and self._rpc.closed is None
        )

    def _fail(self, why: str) -> ServerDown:
        said = self.stderr_tail()
        self.down = why + (f" (it said: {said})" if said else "")
        return ServerDown(self.down)

    async def stop(self) -> None:
        """Ask the server to shut down, then end its process group whatever it does."""
        process = self._process
        if process is None:
            return
        if self.alive and self._rpc is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._rpc.request("shutdown", None), GRACE)
                await asyncio.wait_for(self._rpc.notify("exit", None), GRACE)
        self.down = self.down or "stopped"
        self._wake()
        if self._rpc is not None:
            await self._rpc.close()
        if process.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), GRACE)
        if process.returncode is None:
            await asyncio.to_thread(processes.terminate, process.pid, self._tag, GRACE)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), GRACE * 4)
        processes.untrack(process.pid)
        if self._stderr_task is not None:
            self._stderr_task.cancel()

    # --- talking to it ----------------------------------------------------------------------

    async def request(self, method: str, params: Any) -> Any:
        """The server's answer, within ``timeout``; a server past it is ended (``ServerDown``)."""
        if not self.alive or self._rpc is None:
            raise self._fail(self.down or "the server is not running")
        try:
            return await asyncio.wait_for(self._rpc.request(method, params), self.timeout)
        except TimeoutError:
            error = self._fail(f"it did not answer {method} within {self.timeout:g} s and was ended")
            await self.stop()
            raise error from None
        except ConnectionLost as exc:
            code = self._process.returncode if self._process is not None else None
            raise self._fail(f"it exited (code {code})" if code is not None else str(exc)) from None
        except RequestFailed:
            raise

    async def _notify(self, method: str, params: Any) -> None:
        if not self.alive or self._rpc is None:
            raise self._fail(self.down or "the server is not running")
        try:
            await self._rpc.notify(method, params)
        except ConnectionLost as exc:
            raise self._fail(str(exc)) from None

    def _asked(self, method: str, params: Any) -> Any:
        """The server's own requests: what crab can answer, answered; anything else refused."""
        if method == "workspace/configuration":
            items = params.get("items", []) if isinstance(params, dict) else []
            return [None for _ in items]
        if method == "workspace/workspaceFolders":
            root = self.workspace.resolve().as_uri()
            return [{"uri": root, "name": self.workspace.name}]
        if method in ("window/workDoneProgress/create", "client/registerCapability", "client/unregisterCapability"):
            return None
        raise LookupError(method)

    def _notified(self, method: str, params: Any) -> None:
        if method != "textDocument/publishDiagnostics" or not isinstance(params, dict):
            return
        uri = params.get("uri")
        found = params.get("diagnostics")
        if not isinstance(uri, str) or not isinstance(found, list):
            return
        version = params.get("version")
        if isinstance(version, int) and version < self._versions.get(uri, 0):
            return  # about a text crab has replaced since
        self.diagnostics[uri] = [d for d in found if isinstance(d, dict)]
        self._published[uri] = self._published.get(uri, 0) + 1
        self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    # --- documents --------------------------------------------------------------------------

    def published(self, uri: str) -> int:
        """How many times diagnostics of ``uri`` came so far (wait for more with ``wait``)."""
        return self._published.get(uri, 0)

    async def sync(self, path: Path, text: str) -> bool:
        """Tell the server ``path`` now holds ``text`` (open it, or send the change); whether
        anything was sent (not when the server has this text already)."""
        uri = path.resolve().as_uri()
        if uri not in self._versions:
            self._versions[uri] = 1
            self._texts[uri] = text
            params = {
                "textDocument": {"uri": uri, "languageId": language_of(path, self.spec), "version": 1, "text": text}
            }
            await self._notify("textDocument/didOpen", params)
        elif self._texts.get(uri) != text:
            self._versions[uri] += 1
            self._texts[uri] = text
            document = {"uri": uri, "version": self._versions[uri]}
            await self._notify("textDocument/didChange", {"textDocument": document, "contentChanges": [{"text": text}]})
            await self._notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": text})
        else:
            return False
        return True

    def is_open(self, uri: str) -> bool:
        return uri in self._versions

    async def wait(self, uri: str, seen: int, seconds: float) -> bool:
        """Wait up to ``seconds`` for diagnostics of ``uri`` past the ``seen``-th; whether they came
        (False at once when the server is down)."""
        deadline = asyncio.get_running_loop().time() + seconds
        while self.published(uri) <= seen and self.alive:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.add(waiter)
            try:
                await asyncio.wait_for(waiter, left)
            except TimeoutError:
                break
            finally:
                self._waiters.discard(waiter)
        return self.published(uri) > seen
