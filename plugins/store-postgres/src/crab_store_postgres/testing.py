"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` in a temporary folder.

``TempCluster.start()`` makes a cluster with Debian's (or any) PostgreSQL binaries, listening on
127.0.0.1 at a free port and on a socket in the same folder, with durability switched off (it
is thrown away). ``initdb`` refuses to run as root, so as root the server runs as ``nobody``
through ``setpriv`` (util-linux), in a folder that user owns. ``find_binaries()`` says where the
binaries are, or None: tests skip with one line when there are none.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

UNPRIVILEGED = "nobody"

THROWAWAY = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
"""Server settings of a cluster that is thrown away: nothing waits for the disk."""


def find_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: on PATH, else Debian's newest /usr/lib/postgresql/N/bin."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    versions = []
    for folder in Path("/usr/lib/postgresql").glob("*/bin"):
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            try:
                versions.append((int(folder.parent.name), folder))
            except ValueError:
                continue
    return max(versions)[1] if versions else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class TempCluster:
    """One throwaway server; ``dsn(db)`` connects to it as the superuser ``crab`` (trust auth)."""

    binaries: Path
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="crab-pg-")))
    port: int = 0
    user: str = "crab"
    settings: dict[str, str] = field(default_factory=lambda: dict(THROWAWAY))

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.binaries / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["setpriv", f"--reuid={UNPRIVILEGED}", f"--regid={_group()}", "--clear-groups", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, env=_clean_env())

    def start(self) -> TempCluster:
        if os.geteuid() == 0:
            os.chmod(self.root, 0o755)
            shutil.chown(self.root, UNPRIVILEGED, _group())
        data = self.root / "data"
        made = self._run("initdb", "-D", str(data), "-U", self.user, "-A", "trust", "-E", "UTF8", "--no-sync")
        if made.returncode != 0:
            raise RuntimeError(f"initdb failed: {made.stderr.strip()[-500:]}")
        for _attempt in range(5):
            self.port = _free_port()
            extra = " ".join(f"-c {key}={value}" for key, value in self.settings.items())
            options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c max_connections=200 {extra}"
            started = self._run(
                "pg_ctl", "-D", str(data), "-l", str(self.root / "server.log"), "-w", "-o", options, "start"
            )
            if started.returncode == 0:
                return self
        log = (
            (self.root / "server.log").read_text(errors="replace")[-500:] if (self.root / "server.log").exists() else ""
        )
        raise RuntimeError(f"pg_ctl start failed: {started.stderr.strip()[-300:]} {log}")

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def _group() -> str:
    import grp
    import pwd

    return grp.getgrgid(pwd.getpwnam(UNPRIVILEGED).pw_gid).gr_name


def _clean_env() -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TZ")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.setdefault("LANG", "C.UTF-8")
    return env
