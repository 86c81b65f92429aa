"""Whether a tool may do a small file's I/O on the event loop's thread: ``local_file_io`` (the rule,
read from this process's mount table) and ``run_blocking`` (the other branch: a worker thread).

A blocking tool runs in a worker thread so that a call that hangs (a dead NFS server, a stuck FUSE
daemon, a FIFO with no writer, a device) stalls only itself. A thread costs a small read more than
the read (the GIL handed between the loop and the worker, across cores), so a tool may instead
read on the loop when nothing it does can wait on anything but local memory and disks:

- every mount in ``/proc/self/mountinfo`` is a disk or memory file system or a kernel one whose
  lookups never wait on another machine or process (``LOCAL_FS``, ``KERNEL_FS``): no path, whatever
  symlinks it holds, can lead a lookup into a network, FUSE, automount or unknown file system;
- the path's own mount is a disk or memory file system (a file in ``/proc`` or ``/sys`` can block
  on read: ``/proc/kmsg``), found through the mount tree as the kernel's lookup finds it (a mount
  on a folder hides any made earlier below that folder);
- and then the caller still checks what it opened (``O_NONBLOCK``, a regular file, small: see
  crab-tools-basic's ``read``).

The table is parsed once and read again only when the kernel says it changed (``poll`` on the open
``mountinfo`` reports ``POLLPRI`` after a mount or unmount: one syscall a check, never one on the
path itself). Elsewhere than Linux the answer is always False: the thread, as before.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from crab._system.threads import Cancellable, run_in_thread

T = TypeVar("T")

LOCAL_FS = frozenset(
    {
        "ext2",
        "ext3",
        "ext4",
        "xfs",
        "btrfs",
        "f2fs",
        "zfs",
        "bcachefs",
        "tmpfs",
        "ramfs",
        "overlay",
        "squashfs",
        "erofs",
    }
)
"""File systems on a local disk or in memory: a file on one may be read on the loop."""
KERNEL_FS = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "mqueue",
        "securityfs",
        "debugfs",
        "tracefs",
        "pstore",
        "bpf",
        "configfs",
        "hugetlbfs",
        "binfmt_misc",
        "fusectl",
        "nsfs",
        "efivarfs",
        "selinuxfs",
    }
)
"""The kernel's own file systems: a lookup through them never waits on another machine or
process (reading their files may, so a file on one is never read on the loop)."""

MOUNTINFO = "/proc/self/mountinfo"


@dataclass(frozen=True, slots=True)
class MountTable:
    """What ``local_file_io`` needs of a mount table: the mount tree (each mount by its parent's id
    and its mount point), the root mount, and whether every mount is one a lookup cannot hang on."""

    mounts: dict[tuple[int, str], tuple[int, str]]
    """(parent mount's id, mount point) -> (the mount's id, its file system type)."""
    root: tuple[int, str] | None
    all_local: bool

    def type_of(self, path: str) -> str | None:
        """The file system type of the mount ``path`` (absolute, normalized) lies on.

        Found as the kernel's lookup finds it: from the root mount down, one folder at a time,
        into the mount on that folder of the mount reached so far (and the ones stacked on it).
        The longest mount point is not the answer: a mount made later on a parent folder hides
        it (tmpfs on ``/w/sys``, then proc on ``/w``: ``/w/sys`` is proc's own folder now)."""
        if self.root is None or not path.startswith("/"):
            return None
        mounts = self.mounts
        here = self.root
        probe = "/"
        for part in ("", *(part for part in path.split("/") if part)):
            if part:
                probe = f"{probe}{part}" if probe == "/" else f"{probe}/{part}"
            for _ in range(len(mounts)):  # bounded: a hand-written table may loop
                top = mounts.get((here[0], probe))
                if top is None or top == here:
                    break
                here = top  # a mount on this folder of the mount reached, or one stacked on it
        return here[1]

    def local(self, path: str) -> bool:
        """The rule: every mount local, and ``path`` on a disk or memory file system."""
        return self.all_local and path.startswith("/") and self.type_of(path) in LOCAL_FS


def _unescape(field: str) -> str:
    # mountinfo writes a space, tab, newline and backslash in a path as \040, \011, \012, \134.
    if "\\" not in field:
        return field
    import re

    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> MountTable:
    """The table in the text of a ``/proc/<pid>/mountinfo`` (``proc(5)``); a line it cannot read
    counts as a mount of unknown type, so it makes nothing local (and so does a table with no
    root mount, or two)."""
    mounts: dict[tuple[int, str], tuple[int, str]] = {}
    ids: set[int] = set()
    tops: list[tuple[int, int, str]] = []  # (parent id, id, type) of the mounts on "/"
    all_local = True
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            mount_id, parent_id = int(fields[0]), int(fields[1])
            point = _unescape(fields[4])
            fs_type = fields[fields.index("-", 6) + 1]
        except (IndexError, ValueError):
            if line.strip():
                all_local = False
            continue
        fs_type = fs_type.split(".", 1)[0]  # "fuse.sshfs" is fuse; a subtype never makes one local
        mounts[(parent_id, point)] = (mount_id, fs_type)
        ids.add(mount_id)
        if point == "/":
            tops.append((parent_id, mount_id, fs_type))
        if fs_type not in LOCAL_FS and fs_type not in KERNEL_FS:
            all_local = False
    # The root mount: the one on "/" whose parent is outside this table (a container's, or itself).
    roots = [
        (mount_id, fs_type) for parent_id, mount_id, fs_type in tops if parent_id not in ids or parent_id == mount_id
    ]
    return MountTable(mounts, roots[0] if len(roots) == 1 else None, all_local)


class _Watcher:
    """This process's mount table, re-read when ``poll`` says it changed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fd: int | None = None
        self.poller: Any = None
        self.table = MountTable({}, None, False)

    def current(self) -> MountTable:
        with self.lock:
            try:
                if self.fd is None:
                    self._open()
                elif self.poller.poll(0):
                    self.table = parse_mountinfo(self._read())
            except OSError:
                self._close()
                self.table = MountTable({}, None, False)
            return self.table

    def _open(self) -> None:
        import select

        self.fd = os.open(MOUNTINFO, os.O_RDONLY | os.O_CLOEXEC)
        self.poller = select.poll()
        self.poller.register(self.fd, select.POLLPRI | select.POLLERR)
        self.poller.poll(0)  # the event, if any, is taken here: the read below sees the table after it
        self.table = parse_mountinfo(self._read())

    def _read(self) -> str:
        assert self.fd is not None
        os.lseek(self.fd, 0, os.SEEK_SET)
        chunks: list[bytes] = []
        while chunk := os.read(self.fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8", "surrogateescape")

    def _close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
        self.fd = None
        self.poller = None

    def forget(self) -> None:
        """After a fork: the child shares the parent's open file, and a ``poll`` in one would take
        the change event from the other. The child opens its own on its next check."""
        self.lock = threading.Lock()
        self.fd = None
        self.poller = None
        self.table = MountTable({}, None, False)


_watcher = _Watcher()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_watcher.forget)


def local_file_io(path: str, mountinfo: str | None = None) -> bool:
    """Whether file calls on ``path`` (absolute and normalized: a real path) cannot wait on
    anything but local disks and memory, so a tool may make them on the event loop's thread.

    True only when every mount of this process is a local or kernel file system (no network,
    FUSE, automount or unknown one anywhere, so no symlink can lead there) and ``path`` lies on a
    disk or memory file system. Makes no call on ``path``: one ``poll`` of the open mount table
    (re-read only after a mount or unmount). Still open with ``os.O_NONBLOCK`` and check that what
    opened is a small regular file (a FIFO, a device or a huge file goes to a thread). Always
    False elsewhere than Linux. ``mountinfo``: decide from this text of a ``/proc/<pid>/mountinfo``
    instead (tests).
    """
    table = _watcher.current() if mountinfo is None else parse_mountinfo(mountinfo)
    return table.local(path)


async def run_blocking(fn: Callable[[], T], ctx: Cancellable | None = None) -> T:
    """``fn()`` in a worker thread, as the loop runs a sync tool: in a copy of the caller's context,
    abandoned at a cancel (the call's timeout, an abort) with ``ctx.cancelled`` set so ``fn`` can
    stop by itself, and never waited for at exit. For an ``async`` tool's blocking branch."""
    result: T = await run_in_thread(fn, {}, ctx)
    return result
