"""crab.tools.local_file_io: a path may be read on the loop only when no mount of the process can
make a lookup wait (network, FUSE, automount, unknown) and the path itself is on a disk or memory
file system; run_blocking runs the other branch in a worker thread."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
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


def test_a_mount_hidden_under_a_later_one_does_not_decide() -> None:
    # tmpfs on /srv/ws/sys, then proc on /srv/ws: /srv/ws/sys is proc's sys folder now, the tmpfs
    # is out of reach (the kernel looks up "sys" inside proc). The longest mount point is not it.
    text = BASE + (
        "60 22 0:70 / /srv/ws/sys rw shared:30 - tmpfs none rw\n61 22 0:71 / /srv/ws rw shared:31 - proc proc rw\n"
    )
    table = parse_mountinfo(text)
    assert table.type_of("/srv/ws/sys/kernel/hostname") == "proc"
    assert not local_file_io("/srv/ws/sys/kernel/hostname", mountinfo=text)
    # A mount made inside a later one is reached through it: /dev's devtmpfs, then /dev/shm's tmpfs.
    shm = BASE + "70 22 0:80 / /dev rw - devtmpfs udev rw\n71 70 0:81 / /dev/shm rw - tmpfs tmpfs rw\n"
    assert local_file_io("/dev/shm/ws/a.txt", mountinfo=shm)
    assert not local_file_io("/dev/null", mountinfo=shm)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="mounts in a mount namespace of its own (root, util-linux unshare)",
)
def test_a_proc_mount_over_a_workspace_folder_is_not_local_in_a_real_namespace(tmp_path: Path) -> None:
    hidden = tmp_path / "ws" / "sys"
    hidden.mkdir(parents=True)
    probe = "from crab.tools import local_file_io; import sys; print(local_file_io(sys.argv[1]))"
    script = (
        f"mount -t tmpfs none {hidden} && mount -t proc proc {hidden.parent} && "
        f'"{sys.executable}" -c "{probe}" {hidden}/kernel/hostname'
    )
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    if done.returncode != 0 and "unshare" in done.stderr:
        pytest.skip(f"no mount namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"  # a proc file: a thread reads it, never the loop


def test_a_table_without_one_root_mount_is_not_local() -> None:
    no_root = "30 29 0:5 / /proc rw - proc proc rw\n31 29 8:1 / /home rw - ext4 /dev/sda1 rw\n"
    assert not local_file_io("/home/a.txt", mountinfo=no_root)
    # Stacks that lead back to a mount (no kernel writes that; a hand-written table may): it ends.
    looped = "22 1 8:1 / / rw - ext4 sda1 rw\n40 22 0:9 / / rw - tmpfs a rw\n41 40 0:9 / / rw - tmpfs b rw\n"
    looped += "40 41 0:9 / / rw - tmpfs a rw\n"
    assert local_file_io("/a.txt", mountinfo=looped)
