"""Running git for crab-checkpoints' own bookkeeping: through ``crab.processes``, bounded in time.

Each command gets a tagged process group of its own, so a timeout, Ctrl-C or crab's exit ends it;
its environment fixes the identity and switches off what could prompt or sign, so a checkpoint
never waits on the user's git setup.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from crab import CrabError, processes

GRACE = 0.5
_IDENTITY = {
    "GIT_AUTHOR_NAME": "crab",
    "GIT_AUTHOR_EMAIL": "crab@localhost",
    "GIT_COMMITTER_NAME": "crab",
    "GIT_COMMITTER_EMAIL": "crab@localhost",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
}


class GitError(CrabError):
    """A git command of crab-checkpoints failed or took too long."""


@dataclass(frozen=True, slots=True)
class Git:
    """git in one work tree (``cwd``), each command at most ``timeout`` seconds."""

    cwd: Path
    timeout: float = 60.0

    async def run(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        input: bytes | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[bytes]:
        """``git ARGS`` to its end; a non-zero exit raises ``GitError`` unless ``check`` is False."""
        environ = {**os.environ, **_IDENTITY, **(env or {})}
        tag = processes.new_tag()
        try:
            process = await processes.start(  # tracked; a cancel mid-start ends what started
                ["git", *args],
                tag,
                env=environ,
                cwd=self.cwd,
                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            raise GitError(
                f"cannot run git: {exc.strerror or exc}; install git or switch the checkpoints plugin off"
            ) from None
        try:
            async with asyncio.timeout(self.timeout):
                out, err = await process.communicate(input)
        except (TimeoutError, asyncio.CancelledError) as exc:
            processes.terminate(process.pid, tag, GRACE)
            with contextlib.suppress(TimeoutError, ProcessLookupError):
                await asyncio.wait_for(process.wait(), 5)
            if isinstance(exc, TimeoutError):
                raise GitError(
                    f"git {args[0]} took over {self.timeout:.0f} s; raise [plugins.checkpoints] git_timeout"
                ) from None
            raise
        finally:
            if process.returncode is not None:
                processes.untrack(process.pid)
        result = subprocess.CompletedProcess(list(args), process.returncode or 0, out, err)
        if check and result.returncode != 0:
            said = err.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git {args[0]} failed: {said[-1] if said else f'exit {result.returncode}'}")
        return result

    async def text(self, args: Sequence[str], **options: object) -> str:
        """``git ARGS``' standard output as text, without its last newline."""
        result = await self.run(args, **options)  # type: ignore[arg-type]
        return result.stdout.decode("utf-8", "surrogateescape").removesuffix("\n")


async def work_tree_top(folder: Path, timeout: float = 60.0) -> Path | None:
    """The top of the git work tree ``folder`` is in, or None (not in one, or no git)."""
    try:
        result = await Git(folder, timeout).run(["rev-parse", "--show-toplevel"], check=False)
    except GitError:
        return None
    if result.returncode != 0:
        return None
    top = result.stdout.decode("utf-8", "surrogateescape").strip()
    return Path(top) if top else None
