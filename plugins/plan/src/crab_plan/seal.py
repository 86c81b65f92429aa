"""The seal on a ``/plan off`` note: an HMAC of the session's id under a key in the user's crab
folder, so a stored note is crab-plan's own and not text shaped like it. A note is recorded as a
user message, as is every ``crab_prompt_submit`` context (an HTTP hook's answer, an MCP
resource): without the seal such text would end plan mode when the session is resumed."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

import crab

KEY_FILE = "plan-seal.key"
SEAL = re.compile(r"\[seal ([0-9a-f]{32})\]$")


def _key(home: Path) -> bytes:
    """The user's key, made (32 random bytes, readable by the user only) when there is none."""
    path = home / KEY_FILE
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    home.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another crab made it meanwhile: theirs is the key
        return path.read_bytes()
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    return key


def _mac(session_id: str) -> str | None:
    try:
        key = _key(crab.config.crab_home())
    except (OSError, crab.CrabError):
        return None
    return hmac.new(key, f"plan-off:{session_id}".encode(), hashlib.sha256).hexdigest()[:32]


def sealed(text: str, session_id: str) -> str:
    """``text`` with the seal of ``session_id`` (unsealed when the key cannot be kept: then the
    note does not survive a resume, which leaves plan mode on)."""
    mac = _mac(session_id)
    return f"{text} [seal {mac}]" if mac else text


def is_sealed(text: str, session_id: str) -> bool:
    """Whether ``text`` ends with the seal of ``session_id``."""
    found = SEAL.search(text)
    mac = _mac(session_id) if found else None
    return found is not None and mac is not None and hmac.compare_digest(found.group(1), mac)
