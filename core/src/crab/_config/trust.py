"""Project trust: which projects' ``.crab/config.toml`` the user has vouched for, by path and the
sha256 of its bytes in ``$CRAB_HOME/trusted-projects.json`` (an edit untrusts it; docs/security.md)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import time
from pathlib import Path
from typing import Any

from crab._config.paths import crab_home
from crab._contracts.config import TrustState
from crab._contracts.errors import ConfigError

TRUST_FILE = "trusted-projects.json"


def trust_file() -> Path:
    return crab_home() / TRUST_FILE


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def project_root(config_path: Path) -> Path:
    """``/p`` for ``/p/.crab/config.toml``."""
    return config_path.parent.parent


def trust_command(config_path: Path) -> str:
    return f"crab trust {shlex.quote(str(project_root(config_path)))}"


def read_records(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """Trusted config paths → ``{"sha256", "trusted_at"}``; an unreadable file trusts nothing."""
    path = path or trust_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {k: v for k, v in projects.items() if isinstance(v, dict) and isinstance(v.get("sha256"), str)}


def state_for(config_path: Path, content: bytes) -> TrustState:
    """The trust of ``config_path`` whose bytes (as read for this run) are ``content``."""
    sha = digest(content)
    record = read_records().get(str(config_path))
    if record is None:
        return TrustState(config_path, sha, "untrusted")
    return TrustState(config_path, sha, "trusted" if record["sha256"] == sha else "changed")


def _write(records: dict[str, dict[str, Any]]) -> None:
    from crab._system.atomic import write_atomic

    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        # Create it 0600 first: write_atomic keeps an existing file's mode.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    os.chmod(path, 0o600)
    body = json.dumps({"v": 1, "projects": records}, indent=2, sort_keys=True) + "\n"
    write_atomic(path, body.encode("utf-8"))


def _existing_records() -> dict[str, dict[str, Any]]:
    path = trust_file()
    if path.exists():
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: cannot read the trust file ({exc}); fix or remove it") from None
    return read_records(path)


def trust(config_path: Path) -> TrustState:
    """Record ``config_path`` as trusted with the hash of its current bytes."""
    try:
        content = config_path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"crab trust: cannot read {config_path}: {exc}") from None
    records = _existing_records()
    records[str(config_path)] = {
        "sha256": digest(content),
        "trusted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    _write(records)
    return TrustState(config_path, digest(content), "trusted")


def untrust(config_path: Path) -> bool:
    """Forget ``config_path``; False when it was not trusted."""
    records = _existing_records()
    if records.pop(str(config_path), None) is None:
        return False
    _write(records)
    return True
