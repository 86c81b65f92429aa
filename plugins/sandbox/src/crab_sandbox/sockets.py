"""The host's unix sockets a sandboxed command could connect to: found at each start, to be covered.

A read-only mount does not stop ``connect()`` on a unix socket (only write permission on the
socket's inode is checked, and a read-only file system leaves sockets out of that check), and a
network namespace of its own hides only abstract sockets: a daemon's socket (docker.sock, the
D-Bus system bus, a database's) is reachable through its path from inside. So every listening
socket the host has is looked up before each start: the ones bound in crab's network namespace
(``/proc/net/unix``), and any under ``/run`` (docker.sock bind-mounted into a container was bound
in another namespace, so only the file says it is there).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

PROC_NET_UNIX = Path("/proc/net/unix")
RUN_FOLDERS = (Path("/run"), Path("/var/run"))
RUN_DEPTH = 4
"""How deep below ``/run`` a socket is looked for (``/run/user/1000/bus`` is three levels down)."""
MOST_ENTRIES = 20_000
"""Entries of ``/run`` looked at, at most: the walk before each start stays bounded whatever is there."""


def _bound(table: Path) -> Iterator[str]:
    """Paths of the sockets bound in this network namespace (the last column, when absolute)."""
    try:
        lines = table.read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    except OSError:
        return
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/"):
            yield fields[7]


def _under_run(folders: tuple[Path, ...]) -> Iterator[str]:
    """Socket files below ``folders``, ``RUN_DEPTH`` levels at most, symlinks not followed."""
    seen = 0
    stack = [(str(folder), 0) for folder in folders]
    while stack and seen < MOST_ENTRIES:
        folder, depth = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                if entry.is_symlink():
                    continue
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISSOCK(mode):
                yield entry.path
            elif stat.S_ISDIR(mode) and depth + 1 < RUN_DEPTH:
                stack.append((entry.path, depth + 1))


def host_sockets(table: Path = PROC_NET_UNIX, folders: tuple[Path, ...] = RUN_FOLDERS) -> list[str]:
    """The unix socket paths there are now, each once, from ``table`` and ``folders``.

    Named as bound, unchecked (a socket file may be gone since): the policy drops those it would
    not cover anyway by their names first (``covered``), and checks only the rest, so a desktop's
    hundreds of sockets in ``/run/user`` and ``/tmp`` cost no system call each. Strings, not
    ``Path``s: this runs before every sandboxed command.
    """
    roots = tuple(dict.fromkeys(Path(os.path.realpath(f)) for f in folders))  # /var/run is /run's link
    found = dict.fromkeys(_bound(table))  # a listening socket's accepted connections repeat its path
    found.update(dict.fromkeys(_under_run(roots)))
    return list(found)


def covered(
    candidates: Iterable[str], *, own: Iterable[Path], hidden: Iterable[Path], allowed: Iterable[Path], private: Path
) -> list[Path]:
    """The sockets among ``candidates`` to cover: not in the sandbox's ``own`` folders (the
    workspace, ``writable``), not under ``hidden`` ones, not ``allowed``, not under ``private``
    (/tmp); and still there (bwrap cannot mount over a file that is gone). All folders are real paths.

    /tmp is left out whole. The sandbox's /tmp is a tmpfs of its own, except the host folder
    holding a workspace under /tmp (bound read-only), whose sockets stay reachable: sockets there
    come and go (every test suite's), and one gone between this look and bwrap's start would make
    bwrap fail (it cannot mount over a file that is no longer there), and the command with it.
    """

    def prefixes(paths: Iterable[Path]) -> tuple[str, ...]:
        return tuple(str(p).rstrip("/") + "/" for p in paths)

    # prefixes end in "/": a folder itself is inside, a sibling sharing its name's start is not
    left_alone = (*prefixes(own), *prefixes(hidden), *prefixes([private]))
    let_through = {str(p) for p in allowed}

    def skipped(path: str) -> bool:
        return path in let_through or (path + "/").startswith(left_alone)

    out: dict[str, None] = {}
    for raw in dict.fromkeys(candidates):
        if skipped(raw):  # by its name alone: most of a desktop's sockets, no system call
            continue
        real = os.path.realpath(raw)
        if real not in out and not skipped(real) and is_socket(Path(real)):
            out[real] = None
    return [Path(p) for p in out]


def is_socket(path: Path) -> bool:
    """Whether ``path`` is a unix socket file now."""
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False
