"""Processes crab starts for tools: tagged, in their own group, wrapped (``add_command_wrapper``),
and ended when their owner is done, descendants included (docs/api.md#crabprocesses,
docs/security.md#bounded-tools-and-processes)."""

from __future__ import annotations

import contextlib
import contextvars
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from crab._system import group_watch

if TYPE_CHECKING:
    import asyncio.subprocess

__all__ = [
    "TAG_VARIABLE",
    "CommandWrapper",
    "Launch",
    "Stopped",
    "add_command_wrapper",
    "descendants",
    "enable_subreaper",
    "has_tag",
    "new_tag",
    "reap_orphans",
    "run_bounded",
    "spawn_options",
    "start",
    "tagged_environment",
    "terminate",
    "terminate_all",
    "track",
    "untrack",
    "wrap_command",
]

TAG_VARIABLE = "CRAB_PROCESS_TAG"
PR_SET_CHILD_SUBREAPER = 36
POLL = 0.05
KILL_WAIT = 5.0
"""Seconds ``terminate`` waits for SIGKILLed processes to be gone (only one stuck in the kernel
takes more than a moment)."""

_lock = threading.Lock()
_groups: dict[int, str] = {}  # process group id -> tag of the start that made it
_leaders: set[int] = set()  # pids crab started itself (their own code waits for them)
_subreaper: bool | None = None


def enable_subreaper() -> bool:
    """Make this process a child subreaper (Linux): orphaned descendants re-parent to it.

    Idempotent; returns whether it is one. Never raises: elsewhere it is simply not available.
    """
    global _subreaper
    if _subreaper is not None:
        return _subreaper
    _subreaper = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            _subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            _subreaper = False
    return _subreaper


def new_tag() -> str:
    """A fresh tag naming one start and everything descended from it."""
    return f"{os.getpid()}-{secrets.token_hex(8)}"


def tagged_environment(tag: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: crab's own) with the tag added, for a process crab is about to start."""
    merged = dict(os.environ if env is None else env)
    merged[TAG_VARIABLE] = tag
    return merged


def track(pid: int, tag: str) -> None:
    """Record a started process that leads its own group (``start_new_session=True``)."""
    with _lock:
        _groups[pid] = tag
        _leaders.add(pid)
    group_watch.watch(pid)  # ended even if crab is killed outright


def untrack(pid: int) -> None:
    """Forget a group once it and its tagged descendants are gone."""
    with _lock:
        _groups.pop(pid, None)
        _leaders.discard(pid)
    group_watch.forget(pid)


def spawn_options(tag: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Keyword arguments for ``subprocess``/``asyncio`` starts: own session, tagged environment.

    Call ``track(process.pid, tag)`` right after the start and ``terminate(...)`` when done.
    """
    enable_subreaper()
    return {"start_new_session": True, "env": tagged_environment(tag, env)}


async def start(
    argv: Sequence[str], tag: str, *, env: Mapping[str, str] | None = None, grace: float = 0.5, **options: Any
) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_exec(*argv, **options)`` in a session of its own carrying ``tag``,
    and tracked (``spawn_options`` + ``track`` as one step, API 1.7).

    A cancel that lands while it starts still ends what started, its group and tagged descendants
    (within ``grace`` seconds), before the cancel goes on: a loaded machine runs the child well
    before the caller resumes, and asyncio alone would kill only that child, orphaning its own.
    """
    import asyncio

    program, *arguments = argv
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(program, *arguments, **{**options, **spawn_options(tag, env)})
    )
    try:
        process = await asyncio.shield(spawn)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):  # a failed start, or cancelled again: crab's exit ends it
            started = await spawn
            track(started.pid, tag)
            await asyncio.to_thread(terminate, started.pid, tag, grace)
            await started.wait()
            untrack(started.pid)
        raise
    track(process.pid, tag)
    return process


@dataclass(frozen=True, slots=True)
class Proc:
    """One line of the process table: pid, parent pid, process group and state letter."""

    pid: int
    ppid: int
    pgid: int
    state: str


def _read_stat(pid: int) -> Proc | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself contain ") ".
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return Proc(pid, int(fields[1]), int(fields[2]), fields[0].decode("ascii", "replace"))
    except (IndexError, ValueError):
        return None


def process_table() -> list[Proc]:
    """Every process visible in /proc (empty where there is no /proc)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    table = []
    for name in names:
        if name.isdigit():
            proc = _read_stat(int(name))
            if proc is not None:
                table.append(proc)
    return table


def descendants(root: int | None = None, table: Sequence[Proc] | None = None) -> list[Proc]:
    """Every live process below ``root`` (default: this process), found through /proc."""
    root = os.getpid() if root is None else root
    rows = process_table() if table is None else table
    children: dict[int, list[Proc]] = {}
    for proc in rows:
        children.setdefault(proc.ppid, []).append(proc)
    found: list[Proc] = []
    pending = [root]
    seen = {root}
    while pending:
        for child in children.get(pending.pop(), []):
            if child.pid not in seen:
                seen.add(child.pid)
                found.append(child)
                pending.append(child.pid)
    return found


def has_tag(pid: int, tag: str) -> bool:
    """Whether ``pid`` was started with ``CRAB_PROCESS_TAG=tag`` in its environment."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{TAG_VARIABLE}={tag}".encode() in environ.split(b"\0")


def _signal(pids: Iterable[int], groups: Iterable[int], sig: signal.Signals) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _alive(pids: Iterable[int], groups: Iterable[int]) -> bool:
    """Whether any of ``pids`` or any member of ``groups`` is still running (zombies do not count)."""
    table = process_table()
    if not table:  # no /proc: ask the kernel about the groups, zombies and all
        for pgid in groups:
            try:
                os.killpg(pgid, 0)
                return True
            except ProcessLookupError:
                continue
            except PermissionError:
                return True
        return False
    wanted_pids, wanted_groups = set(pids), set(groups)
    return any(p.state != "Z" and (p.pid in wanted_pids or p.pgid in wanted_groups) for p in table)


def _targets(tag: str | None, groups: Iterable[int]) -> list[int]:
    """Descendants to end: those carrying ``tag`` (None: all of them), in one of ``groups``, or
    below a process that is (a child that left the group with ``setsid`` and dropped the tag,
    or is caught mid-``exec``, when its environment reads empty, is still below its parent)."""
    wanted = set(groups)
    marked: set[int] = set()
    found = []
    for proc in descendants():  # parents come before their children
        if tag is None or proc.pgid in wanted or proc.ppid in marked or has_tag(proc.pid, tag):
            marked.add(proc.pid)
            if proc.state != "Z":
                found.append(proc.pid)
    return found


def reap_orphans() -> None:
    """Collect the exit status of re-parented descendants that ended (they are crab's zombies).

    Only processes crab did not start itself: the code that started one waits for it.
    """
    with _lock:
        mine = set(_leaders)
    for proc in descendants():
        if proc.ppid == os.getpid() and proc.state == "Z" and proc.pid not in mine:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(proc.pid, os.WNOHANG)


def terminate(pgid: int, tag: str | None, grace: float) -> None:
    """End group ``pgid`` and every descendant of crab carrying ``tag``: SIGTERM, then SIGKILL.

    Returns once they are gone (zombies at most), or after ``grace`` seconds plus ``KILL_WAIT``
    for a process stuck in the kernel. Descendants found by tag include those
    that left the group with ``setsid`` (they stay below crab while it is a subreaper). The
    caller still waits for its own process, then calls ``untrack``.
    """
    _end([pgid], tag, grace)


def terminate_all(grace: float = 0.5) -> None:
    """End every tracked group and every descendant of this process (crab's exit path)."""
    with _lock:
        groups = list(_groups)
    _end(groups, None, grace)
    with _lock:
        _groups.clear()
        _leaders.clear()


def _end(groups: Sequence[int], tag: str | None, grace: float) -> None:
    pids = _targets(tag, groups)
    _signal(pids, groups, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _alive(pids, groups):
        reap_orphans()
        time.sleep(POLL)
    # A forking loop may have made new ones meanwhile: look again for the SIGKILL.
    for _ in range(3):
        pids = _targets(tag, groups)
        _signal(pids, groups, signal.SIGKILL)
        if not pids:
            break
    # SIGKILL is not death: a process still has to be scheduled and free its memory (a quarter
    # of a GiB takes 0.15 s, far longer on a loaded machine). Returning before that let a caller
    # (run_bounded's Stopped, a tool's timeout) see its processes still running.
    deadline = time.monotonic() + KILL_WAIT
    while pids and time.monotonic() < deadline and _alive(pids, groups):
        reap_orphans()
        time.sleep(POLL / 5)
    reap_orphans()


@dataclass(frozen=True, slots=True)
class Launch:
    """A command a tool is about to start, as a ``CommandWrapper`` sees it.

    ``tool`` and ``permission`` (read, write, exec or network) name the tool call it is for, and
    ``context`` is that call's ``crab.ToolContext`` (workspace, config, session); all three are
    empty (``""``, ``""``, None) for a process started outside a tool call, unless its starter
    named them (``wrap_command``'s keywords): crab-mcp starts a stdio server as the tool
    ``"mcp:NAME"`` with the server's permission class and a context without a call id. A ``!cmd`` is the
    ``exec`` tool ``"!"``, or ``"!keyboard"`` when a person typed it at the keyboard of
    ``crab chat`` (there the person is the user, so a sandbox may leave it alone).
    """

    argv: tuple[str, ...]
    cwd: Path | None = None
    tool: str = ""
    permission: str = ""
    context: Any = None


CommandWrapper = Callable[[Launch], "Sequence[str] | None"]
"""Gets a ``Launch``, returns the argv to start instead (or None to leave it). May raise
``crab.ToolError`` to refuse the start: the tool's call then fails with that message."""

_wrappers: list[CommandWrapper] = []
_call: contextvars.ContextVar[tuple[str, str, Any] | None] = contextvars.ContextVar("crab_tool_call", default=None)


def add_command_wrapper(wrapper: CommandWrapper) -> Callable[[], None]:
    """Wrap every command tools start from now on; returns the function that removes it again.

    Wrappers apply in the order added, each to the argv the previous one returned. They are
    process-wide: one that serves one agent of several in a process tells its own calls apart by
    ``launch.context.config``.
    """
    with _lock:
        _wrappers.append(wrapper)

    def remove() -> None:
        with _lock, contextlib.suppress(ValueError):
            _wrappers.remove(wrapper)

    return remove


def wrap_command(
    argv: Sequence[str],
    cwd: str | Path | None = None,
    *,
    tool: str | None = None,
    permission: str = "",
    context: Any = None,
) -> list[str]:
    """The argv to start for ``argv`` in ``cwd``: as it is, or as the registered wrappers make it.

    The wrappers see the tool call running now; ``tool`` (with ``permission`` and ``context``)
    names another starter instead, for a process started outside any tool call on an agent's
    behalf (since API 1.5).
    """
    command = list(argv)
    with _lock:
        wrappers = list(_wrappers)
    if not wrappers:
        return command
    if tool is not None:
        call: tuple[str, str, Any] = (tool, permission, context)
    else:
        call = _call.get() or ("", "", None)
    tool, permission, context = call
    where = Path(cwd) if cwd is not None else None
    for wrapper in wrappers:
        replaced = wrapper(Launch(tuple(command), where, tool, permission, context))
        if replaced is not None:
            command = list(replaced)
    return command


@contextlib.contextmanager
def _tool_call(tool: str, permission: str, context: Any) -> Iterator[None]:
    """Mark the code inside as running one tool call, for ``wrap_command`` (``crab.tools.run_tool`` uses it)."""
    token = _call.set((tool, permission, context))
    try:
        yield
    finally:
        _call.reset(token)


def _feed(sink: IO[bytes], data: bytes) -> None:
    try:
        with sink:
            sink.write(data)
    except OSError:
        pass  # the process ended (or was ended) before reading it all


class Stopped(Exception):
    """``run_bounded`` ended its process early because ``stop`` was set."""


def run_bounded(
    args: Sequence[str],
    stop: threading.Event | None = None,
    *,
    input: bytes | None = None,
    cwd: str | Path | None = None,
    grace: float = 0.5,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``args`` to completion, capturing output, as a tracked group that ``stop`` can end.

    For blocking code (a sync tool's thread). When ``stop`` is set the whole group is ended
    and ``Stopped`` is raised; ``terminate_all`` ends it too if crab exits first.
    """
    tag = new_tag()
    command = wrap_command(args, cwd)
    process = subprocess.Popen(
        command,
        cwd=cwd,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **spawn_options(tag),
    )
    track(process.pid, tag)
    try:
        if input is not None and process.stdin is not None:
            # communicate() drops unsent input when retried after a timeout: feed it from a thread.
            sink, process.stdin = process.stdin, None
            threading.Thread(target=_feed, args=(sink, input), daemon=True).start()
        while True:
            try:
                out, err = process.communicate(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                if stop is not None and stop.is_set():
                    raise Stopped() from None
        return subprocess.CompletedProcess(list(args), process.returncode, out, err)
    finally:
        if process.returncode is None:
            terminate(process.pid, tag, grace)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(grace)
        untrack(process.pid)
