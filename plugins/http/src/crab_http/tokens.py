"""The bearer tokens that open the HTTP channel, stored hashed in ``$CRAB_HOME/http/tokens.json``.

A token is 32 random bytes (``crab_`` + URL-safe base64), shown once when it is made. Only its
SHA-256 is stored: with 256 bits of entropy a fast hash is enough (nothing to guess from, unlike a
password), and checking one costs microseconds per request. The file is written atomically and
kept at 0600. Each token has a name; the name is who a request is (its sessions, its rate limit).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crab

PREFIX = "crab_"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def tokens_path() -> Path:
    return crab.config.crab_home() / "http" / "tokens.json"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


MAX_FILE_BYTES = 1_000_000
"""A token file is a few hundred bytes per token: anything past this is not one."""


def _read_small(path: Path) -> str:
    """The text of ``path`` if it is a regular file of at most ``MAX_FILE_BYTES``: a FIFO, a
    device or a folder put there would otherwise block or flood every request's check."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        raw = file.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise OSError(f"larger than {MAX_FILE_BYTES:,} bytes")
    return raw.decode("utf-8")


@dataclass(frozen=True)
class TokenInfo:
    name: str
    created: float


class TokenStore:
    """The named tokens of one ``CRAB_HOME``; every method reads the file afresh."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or tokens_path()

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(_read_small(self.path))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise crab.ConfigError(f"http: cannot read {self.path}: {exc}; fix or remove it") from None
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, dict):
            raise crab.ConfigError(f'http: {self.path} has no "tokens" table; fix or remove it')
        return {str(k): v for k, v in tokens.items() if isinstance(v, dict) and isinstance(v.get("sha256"), str)}

    def _write(self, tokens: dict[str, dict[str, Any]]) -> None:
        data = json.dumps({"tokens": tokens}, indent=2, sort_keys=True).encode() + b"\n"
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():  # write_atomic keeps an existing file's bits: make the first one 0600
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
        os.chmod(self.path, 0o600)
        crab.tools.write_atomic(self.path, data)

    def create(self, name: str) -> str:
        """A new token named ``name`` (returned once; only its hash is kept)."""
        if not NAME_PATTERN.match(name):
            raise crab.UsageError(
                f"http: token name {name!r} must be 1-64 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            )
        tokens = self._read()
        if name in tokens:
            raise crab.UsageError(
                f"http: a token named {name!r} exists: revoke it first (crab http token revoke {name})"
            )
        token = PREFIX + secrets.token_urlsafe(32)
        tokens[name] = {"sha256": digest(token), "created": round(time.time(), 3)}
        self._write(tokens)
        return token

    def revoke(self, name: str) -> bool:
        tokens = self._read()
        if tokens.pop(name, None) is None:
            return False
        self._write(tokens)
        return True

    def list(self) -> list[TokenInfo]:
        return [TokenInfo(name, float(v.get("created") or 0)) for name, v in sorted(self._read().items())]

    def hashes(self) -> dict[str, str]:
        """sha256 hex → token name."""
        return {v["sha256"]: name for name, v in self._read().items()}


def identify(token: str, hashes: dict[str, str]) -> str | None:
    """The name of ``token`` among ``hashes`` (constant-time comparison), or None."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    wanted = digest(token)
    found = None
    for known, name in hashes.items():
        if hmac.compare_digest(known, wanted):
            found = name
    return found
