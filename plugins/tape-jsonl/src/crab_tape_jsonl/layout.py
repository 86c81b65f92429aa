"""Where tapes live: ``<root>/<workspace folder>/<session id>.jsonl``, and safe names for both."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from crab import StoreError

SUFFIX = ".jsonl"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def workspace_folder(workspace: str) -> str:
    """A readable, filesystem-safe folder name for a workspace path, plus a short hash of it.

    ``/home/ana/src/my app`` → ``home-ana-src-my-app-3f2a9c1b``. The hash keeps two paths that
    slug alike (``a/b`` and ``a-b``) apart; the slug keeps only the path's tail so names stay short.
    """
    slug = _UNSAFE.sub("-", workspace).strip("-.")
    slug = slug[-48:].lstrip("-.") or "workspace"
    digest = hashlib.sha256(workspace.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{slug}-{digest}"


def check_session_id(session_id: str) -> None:
    """Refuse ids that could escape the root (``../x``) or are not file names; they cannot exist."""
    if not _SESSION_ID.match(session_id):
        raise StoreError(f"no session {session_id!r} in the JSONL store (not a valid session id)")


def tape_path(root: Path, workspace: str, session_id: str) -> Path:
    check_session_id(session_id)
    return root / workspace_folder(workspace) / f"{session_id}{SUFFIX}"
