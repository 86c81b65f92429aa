"""The language servers of one run: which configured servers take a file (its ``patterns``), each
started on first use, one per workspace, and started again after it went down, up to
``MAX_STARTS`` failed starts in a row (then each use says why, once per call, without trying)."""

from __future__ import annotations

import asyncio
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from crab_lsp.server import LanguageServer, ServerDown
from crab_lsp.settings import ServerSpec

MAX_STARTS = 3
"""Failed starts in a row after which a server is not started again in this run."""


def matches(spec: ServerSpec, relative: str) -> bool:
    """Whether ``relative`` (a posix path from the workspace) is one of ``spec``'s files: a
    pattern is tested against the whole path and against the file's name."""
    name = PurePosixPath(relative).name
    return any(fnmatchcase(relative, p) or fnmatchcase(name, p) for p in spec.patterns)


class Servers:
    """Every configured server for one workspace, started when a file of theirs is first used."""

    def __init__(self, specs: list[ServerSpec], workspace: Path, timeout: float) -> None:
        self.specs = specs
        self.workspace = workspace
        self.timeout = timeout
        self._running: dict[str, LanguageServer] = {}
        self._failures: dict[str, list[str]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.started = 0
        """Servers started in this run (the first start and every restart)."""

    def for_file(self, relative: str) -> list[ServerSpec]:
        return [spec for spec in self.specs if matches(spec, relative)]

    async def get(self, spec: ServerSpec) -> LanguageServer:
        """``spec``'s running server, started (again) when it is not; raises ``ServerDown``."""
        lock = self._locks.setdefault(spec.name, asyncio.Lock())
        async with lock:
            server = self._running.get(spec.name)
            if server is not None and server.alive:
                return server
            failures = self._failures.setdefault(spec.name, [])
            if len(failures) >= MAX_STARTS:
                raise ServerDown(
                    f"{len(failures)} starts failed in a row, the last: {failures[-1]}; "
                    f"fix [plugins.lsp.servers.{spec.name}] and start crab again"
                )
            if server is not None:
                await server.stop()
            server = LanguageServer(spec, self.workspace, self.timeout)
            self.started += 1
            try:
                await server.start()
            except ServerDown as exc:
                failures.append(str(exc))
                await server.stop()
                raise
            except BaseException:
                await server.stop()
                raise
            failures.clear()
            self._running[spec.name] = server
            return server

    async def close(self) -> None:
        running, self._running = list(self._running.values()), {}
        await asyncio.gather(*(server.stop() for server in running), return_exceptions=True)
