"""Writing a file so that a reader sees either the old bytes or the new, never half of either (config
edits, and tool plugins writing the user's files)."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path


def _create_temp(folder: Path, name: str) -> tuple[int, Path]:
    for _ in range(100):
        tmp = folder / f".{name}.{os.urandom(4).hex()}.crab-tmp"
        try:
            # 0o666 lets the kernel apply the umask, as it would for a plain new file; reading
            # the umask ourselves would briefly change it for every thread of the process.
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file in {folder}")


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` via a temp file in the same folder and ``os.replace``.

    An existing file's permission bits are kept (a new file gets the umask default) and missing
    parent folders are created. The temp file is removed if anything fails before the rename.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    fd, tmp = _create_temp(path.parent, path.name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
