"""The sandbox one command runs in, as bwrap arguments: what it may write, see, reach and inherit.

The rest of the file system is read-only; the workspace and the ``writable`` folders are
writable; ``/tmp`` is private (a tmpfs, except that the host folder holding a workspace under
``/tmp`` is bound read-only, so ``..`` does not land in a writable tmpfs); hidden paths are
covered by an empty mode-000 folder or file; secret variables are unset; the network namespace is
new (loopback only) unless the call may use the network; the host's unix sockets outside the
workspace and /tmp are covered like hidden files (``sockets``: a read-only mount does not stop a
connect), except those ``unix_sockets`` lets through; all capabilities are dropped; and the sandbox has its
own pid namespace, so everything in it dies with its command or with crab.

Secret variables are taken out before bwrap starts (``env -u NAME ... bwrap``), not by bwrap's
``--unsetenv``: bwrap is pid 1 inside the sandbox, and ``/proc/1/environ`` (and ``ps e``) would
show a command everything bwrap was started with.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from crab_sandbox import sockets as host_sockets
from crab_sandbox.settings import Settings

SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|TOKEN|SECRET|PASSWORD|DSN|CREDENTIALS?)$", re.IGNORECASE)
"""Variable names that hold secrets whatever the config says (crab's own rule, and credentials)."""

PRIVATE_TMP = Path("/tmp")


@dataclass(frozen=True, slots=True)
class Facts:
    """What one sandboxed command was denied, for the note added to its result."""

    writable: tuple[Path, ...]
    hidden: tuple[Path, ...]
    unset: tuple[str, ...]
    network: bool
    sockets: tuple[Path, ...] = ()
    """The host's unix sockets covered for this command."""


def secret_variables(env: Mapping[str, str], secrets: Iterable[str], extra: Sequence[str] = ()) -> list[str]:
    """Names in ``env`` not to pass in: secret-looking names, crab's known secret values, ``extra``."""
    values = {s for s in secrets if s}
    wanted = set(extra)
    return sorted(name for name, value in env.items() if name in wanted or SECRET_NAME.search(name) or value in values)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _tmp_top(path: Path) -> Path | None:
    """The child of /tmp holding ``path``, when ``path`` is below /tmp."""
    if PRIVATE_TMP in path.parents:
        return PRIVATE_TMP / path.relative_to(PRIVATE_TMP).parts[0]
    return None


def build(
    bwrap: str,
    argv: Sequence[str],
    *,
    workspace: Path,
    cwd: Path | None,
    settings: Settings,
    env: Mapping[str, str],
    secrets: Iterable[str],
    network: bool,
    unreadable: Path,
    sockets: Iterable[str] = (),
) -> tuple[list[str], Facts]:
    """The command line running ``argv`` in bwrap, and what it keeps from the command.

    ``unreadable`` is an empty mode-000 file, bound over hidden files (a hidden folder gets an
    empty mode-000 tmpfs), so reading one fails with ``Permission denied`` instead of reading empty,
    and over the host's unix ``sockets`` (``crab_sandbox.sockets``), so a connect fails.
    """
    writable = [_real(p) for p in (workspace, *settings.writable) if p.exists()]
    unset = secret_variables(env, secrets, settings.hidden_env)
    # bwrap runs with the environment it is started with (and is pid 1 inside): clean it first.
    args: list[str] = []
    if unset:
        args += [shutil.which("env") or "/usr/bin/env", *(part for name in unset for part in ("-u", name)), "--"]
    args += [bwrap, "--die-with-parent", "--new-session"]
    args += ["--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", str(PRIVATE_TMP)]
    shown: list[Path] = []
    for root in writable:
        top = _tmp_top(root)
        if top is not None and top not in shown:
            shown.append(top)
            args += ["--ro-bind", str(top), str(top)]
    for root in writable:
        args += ["--bind", str(root), str(root)]
    hidden: list[Path] = []
    for path in settings.hidden:
        real = _real(path)
        if not real.exists() or (PRIVATE_TMP in real.parents and not _under(real, [*shown, *writable])):
            continue  # nothing to hide, or already out of sight in the private /tmp
        if real.is_dir():
            args += ["--perms", "0000", "--tmpfs", str(real)]
        else:
            args += ["--ro-bind", str(unreadable), str(real)]
        hidden.append(path)
    covered = host_sockets.covered(
        sockets,
        own=writable,
        hidden=[_real(p) for p in hidden],
        allowed=[_real(p) for p in settings.unix_sockets],
        private=PRIVATE_TMP,
    )
    for socket in covered:
        args += ["--ro-bind", str(unreadable), str(socket)]
    args += ["--cap-drop", "ALL", "--disable-userns"]
    if cwd is not None:
        args += ["--chdir", str(cwd)]
    args += ["--", *argv]
    return args, Facts(tuple(writable), tuple(hidden), tuple(unset), network, tuple(covered))
