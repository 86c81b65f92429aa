"""What crab-lsp does with its servers: the diagnostics of a file after an edit, and the answers
behind its tools. A file outside the workspace is refused; a file no server takes says so; a
server that is down says why (``Servers`` starts it again on the next use)."""

from __future__ import annotations

import asyncio
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crab import ToolResult

from crab_lsp import text
from crab_lsp.rpc import RequestFailed
from crab_lsp.server import LanguageServer, ServerDown
from crab_lsp.servers import Servers
from crab_lsp.settings import server_specs

MAX_FILE = 4_000_000
"""Bytes of a file crab sends a server; a bigger one is left out (a generated bundle)."""


class Refused(Exception):
    """A tool call crab-lsp cannot answer, with the one line saying why."""


class Lsp:
    """The language servers of one agent and what is asked of them."""

    def __init__(self, workspace: Path, settings: Mapping[str, Any]) -> None:
        self.workspace = workspace.resolve()
        self.wait = float(settings["diagnostics_wait"])
        self.limit = int(settings["max_diagnostics"])
        self.servers = Servers(server_specs(settings), self.workspace, float(settings["request_timeout"]))

    def relative(self, path: str) -> tuple[Path, str]:
        """(absolute path, posix path from the workspace) of a tool's ``path``; refuses one outside."""
        root = self.workspace.resolve()
        full = (root / path).resolve()
        try:
            return full, full.relative_to(root).as_posix()
        except ValueError:
            raise Refused(f"{path} is outside the workspace; give a path inside {root}") from None

    def _read(self, full: Path, relative: str) -> str:
        try:
            info = full.stat()
            if full.is_dir():
                raise Refused(f"{relative} is a folder; give a file")
            if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would block or never end
                raise Refused(f"{relative} is not a regular file")
            if info.st_size > MAX_FILE:
                raise Refused(f"{relative} is larger than {MAX_FILE:,} bytes; language servers are not given it")
            return full.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise Refused(f"{relative} does not exist") from None
        except OSError as exc:
            raise Refused(f"cannot read {relative}: {exc.strerror or exc}") from None

    async def _servers(self, relative: str) -> list[LanguageServer]:
        specs = self.servers.for_file(relative)
        if not specs:
            names = ", ".join(s.name for s in self.servers.specs) or "none"
            raise Refused(
                f"no language server takes {relative} (configured: {names}); add one under [plugins.lsp.servers]"
            )
        started: list[LanguageServer] = []
        problems: list[str] = []
        for spec in specs:
            try:
                started.append(await self.servers.get(spec))
            except ServerDown as exc:
                problems.append(f"language server {spec.name} is down: {exc}")
        if not started:
            raise Refused("; ".join(problems))
        return started

    # --- diagnostics -----------------------------------------------------------------------

    async def diagnostics(self, path: str, wait: float | None = None) -> str:
        """The file's current diagnostics from every server that takes it (errors first)."""
        full, relative = self.relative(path)
        content = self._read(full, relative)
        deadline = time.monotonic() + (self.wait if wait is None else wait)
        servers = await self._servers(relative)
        results = await asyncio.gather(*(self._one(s, full, relative, content, deadline) for s in servers))
        return "\n\n".join(r for r in results if r)

    async def _one(self, server: LanguageServer, full: Path, relative: str, content: str, deadline: float) -> str:
        uri = full.as_uri()
        seen = server.published(uri)
        try:
            sent = await server.sync(full, content)
        except ServerDown as exc:
            return f"language server {server.spec.name} is down: {exc}"
        came = sent and await server.wait(uri, seen, max(0.0, deadline - time.monotonic()))
        while came and server.spec.settle > 0:  # more parts may follow; each restarts the quiet time
            left = deadline - time.monotonic()
            if left <= 0 or not await server.wait(uri, server.published(uri), min(server.spec.settle, left)):
                break
        if not came and server.published(uri) == 0:
            if server.down:
                return f"language server {server.spec.name} is down: {server.down}"
            if not server.alive:
                said = await server.last_words()
                return f"language server {server.spec.name} exited" + (f" (it said: {said})" if said else "")
            return f"{server.spec.name}: no diagnostics for {relative} within {self.wait:g} s"
        return text.diagnostics(relative, server.diagnostics.get(uri, []), self.limit, server.spec.name)

    async def after_edit(self, path: str) -> str | None:
        """The new diagnostics of a file just written or edited, or None (no server takes it,
        or it is clean). A server that cannot answer is one line, never a failed edit."""
        try:
            _, relative = self.relative(path)
            if not self.servers.for_file(relative):
                return None
            said = await self.diagnostics(path)
        except Refused as exc:
            return str(exc)
        except Exception as exc:  # the edit happened: a problem here is a line, never a withheld result
            return f"crab-lsp could not get diagnostics for {path}: {type(exc).__name__}: {exc}"
        return said or None

    # --- navigation ------------------------------------------------------------------------

    async def ask(self, method: str, path: str, line: int | None = None, column: int | None = None) -> Any:
        """``method`` about ``path`` (at ``line``/``column``) from the first server that answers it."""
        full, relative = self.relative(path)
        content = self._read(full, relative)
        params: dict[str, Any] = {"textDocument": {"uri": full.as_uri()}}
        if line is not None and column is not None:
            params["position"] = text.to_lsp(content, line, column)
        if method == "textDocument/references":
            params["context"] = {"includeDeclaration": True}
        problems: list[str] = []
        for server in await self._servers(relative):
            try:
                await server.sync(full, content)
                answer = await server.request(method, params)
            except (ServerDown, RequestFailed) as exc:
                problems.append(f"{server.spec.name}: {exc}")
                continue
            if answer:
                return answer
        if problems:
            raise Refused("; ".join(problems))
        return None

    async def close(self) -> None:
        await self.servers.close()


async def after_edit_result(lsp: Lsp, path: str, result: ToolResult) -> ToolResult | None:
    """An edit's result with the file's new diagnostics after it, or None (nothing to add)."""
    said = await lsp.after_edit(path)
    return ToolResult(f"{result.content}\n\n{said}", result.is_error, result.details) if said else None
