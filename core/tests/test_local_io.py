"""crab.tools.local_file_io: a path may be read on the loop only when no mount of the process can
make a lookup wait (network, FUSE, automount, unknown) and the path itself is on a disk or memory
file system; run_blocking runs the other branch in a worker thread."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import pytest
from crab import ToolContext
from crab._system.local_io import parse_mountinfo
from crab.tools import local_file_io, run_blocking

BASE = (
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
    "23 22 0:5 / /proc rw,nosuid shared:2 - proc proc rw\n"
    "24 22 0:6 / /sys rw shared:3 - sysfs sysfs rw\n"
    "25 22 0:21 / /tmp rw shared:4 - tmpfs tmpfs rw\n"
    "26 22 0:22 / /var/lib/docker/x rw shared:5 - overlay overlay rw,lowerdir=/a,upperdir=/b\n"
    "27 22 0:23 / /home/me/my\\040files rw shared:6 - btrfs /dev/sdb1 rw\n"
)


@pytest.mark.parametrize(
    ("path", "local"),
    [
        ("/home/me/project/a.txt", True),
        ("/tmp/x", True),
        ("/var/lib/docker/x/etc/hosts", True),
        ("/home/me/my files/a", True),
        ("/proc/kmsg", False),  # a kernel file system: lookups never wait, reads may
        ("/sys/class/x", False),
        ("relative/a.txt", False),
    ],
)
def test_local_mounts(path: str, local: bool) -> None:
    assert local_file_io(path, mountinfo=BASE) is local


@pytest.mark.parametrize(
    "line",
    [
        "40 22 0:50 / /mnt/remote rw shared:9 - fuse.sshfs me@host:/ rw",
        "41 22 0:51 / /srv/share rw shared:10 - nfs4 host:/export rw",
        "42 22 0:52 / /mnt/win rw shared:11 - cifs //host/c rw",
        "43 22 0:53 / /net rw shared:12 - autofs systemd-1 rw",
        "44 22 0:54 / /mnt/vm rw shared:13 - 9p hostshare rw",
        "45 22 0:55 / /mnt/x rw shared:14 - somethingnew none rw",
        "a line no parser knows",
    ],
)
def test_any_mount_a_lookup_could_wait_on_makes_every_path_not_local(line: str) -> None:
    # Even a path far from that mount: a symlink on the way could lead into it.
    assert not local_file_io("/home/me/project/a.txt", mountinfo=BASE + line + "\n")


def test_the_mount_on_top_decides() -> None:
    table = parse_mountinfo(BASE + "50 25 0:60 / /tmp rw shared:20 - proc proc rw\n")
    assert table.type_of("/tmp/a") == "proc"
    assert not table.local("/tmp/a")
    assert table.type_of("/tmpfoo") == "ext4"  # a prefix of the text is not a parent folder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/mountinfo")
def test_this_process_table_is_the_one_read() -> None:
    text = Path("/proc/self/mountinfo").read_text()
    here = str(Path.cwd().resolve())
    assert local_file_io(here) is parse_mountinfo(text).local(here)
    assert local_file_io(here) is local_file_io(here)  # the second answer from the kept table


def test_run_blocking_runs_in_a_worker_and_a_cancel_tells_the_function(tmp_path: Path) -> None:
    ctx = ToolContext(session_id="s", workspace=tmp_path)
    release = threading.Event()

    async def main() -> tuple[int, bool]:
        ident = await run_blocking(threading.get_ident, ctx)
        task = asyncio.ensure_future(run_blocking(lambda: release.wait(60), ctx))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return ident, ctx.cancelled.is_set()

    try:
        ident, cancelled = asyncio.run(main())
    finally:
        release.set()
    assert ident != threading.get_ident()
    assert cancelled
