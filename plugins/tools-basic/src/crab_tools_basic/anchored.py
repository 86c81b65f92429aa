"""Opening a checked path from its root's folder descriptor, one component at a time, no symlinks.

``Workspace.resolve`` checks a path's text. A folder on that path swapped for a symlink after the
check would carry a plain ``open`` (or a write) wherever the link points, a race any local process
can win. Here every folder is opened with ``O_NOFOLLOW`` relative to the one before it, starting
at the root's, and the file relative to the last: what is opened is what was checked, or nothing.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from crab import ToolError

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# ENOTDIR: O_DIRECTORY met a symlink (Linux); ELOOP: O_NOFOLLOW met one (the BSDs, macOS).
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.ENOTDIR, errno.EMLINK})


@dataclass(frozen=True, slots=True)
class Parent:
    """The opened folder a checked path lies in (``fd``) and the path's last component (``name``)."""

    fd: int
    name: str
    display: str


def swapped(display: str, part: str) -> ToolError:
    """The error for a path whose folder or file became a symlink after the workspace check."""
    return ToolError(
        f"{display} changed while crab opened it ({part} is now a symlink); crab does not follow it. "
        "Check the path and try again"
    )


def _open_folder(fd: int, part: str, display: str) -> int:
    try:
        return os.open(part, _FOLDER_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS and _is_symlink(fd, part):
            raise swapped(display, part) from None
        raise


def _is_symlink(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def parent_of(root: Path, real: Path, display: str, *, create: bool = False) -> Iterator[Parent]:
    """The folder ``real`` lies in, opened from ``root`` without following any symlink.

    ``real`` is a resolved path inside ``root`` (``Workspace.resolve`` made it). Missing folders
    are made when ``create`` is set; otherwise a missing one is "does not exist". ``real == root``
    opens ``root``'s parent, so the caller finds a folder where it wanted a file and says so.
    """
    text, base = str(real), str(root).rstrip("/")
    if text == str(root):
        root, name = root.parent, root.name
        parts: tuple[str, ...] = ()
    elif text.startswith(base + "/"):  # real.is_relative_to(root), by the text of two normalized paths
        *folders, name = text[len(base) + 1 :].split("/")
        parts = tuple(folders)
    else:
        raise ToolError(f"{display} is outside {root}")
    fd = _open_root(root, display)
    try:
        for part in parts:
            try:
                inner = _open_folder(fd, part, display)
            except FileNotFoundError:
                if not create:
                    raise ToolError(f"{display} does not exist") from None
                with contextlib.suppress(FileExistsError):  # made meanwhile by a parallel write
                    os.mkdir(part, dir_fd=fd)
                inner = _open_folder(fd, part, display)
            os.close(fd)
            fd = inner
        yield Parent(fd, name, display)
    finally:
        os.close(fd)


def _open_root(root: Path, display: str) -> int:
    try:
        return os.open(root, _FOLDER_FLAGS)
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS and root.is_symlink():
            raise swapped(display, str(root)) from None
        raise


def open_entry(parent: Parent, flags: int, mode: int = 0o666) -> int:
    """``os.open`` of ``parent.name`` inside ``parent``, refusing a symlink in its place."""
    try:
        return os.open(parent.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=parent.fd)
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS and _is_symlink(parent.fd, parent.name):
            raise swapped(parent.display, parent.name) from None
        raise


def replace_entry(parent: Parent, data: bytes, mode: int | None) -> int:
    """Replace ``parent.name`` with ``data`` atomically (temp file, fsync, rename); its new mtime (ns).

    ``mode`` is the replaced file's permission bits to keep; ``None`` (a new file) takes the umask
    default. The temp file lives in the same opened folder, so the rename cannot leave it.
    """
    fd, tmp = _create_temp(parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            mtime_ns = os.fstat(handle.fileno()).st_mtime_ns
        os.replace(tmp, parent.name, src_dir_fd=parent.fd, dst_dir_fd=parent.fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=parent.fd)
        raise
    return mtime_ns


def _create_temp(parent: Parent) -> tuple[int, str]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        tmp = f".{parent.name}.{os.urandom(4).hex()}.crab-tmp"
        try:
            # 0o666 lets the kernel apply the umask, as for any new file.
            return os.open(tmp, flags, 0o666, dir_fd=parent.fd), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file beside {parent.display}")
