"""API keys: looked up from an environment variable, then ``crab_home()/auth.json``; and
redaction of every secret crab knows, so keys never reach an event, a log, a tape or an error.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from crab._config.paths import crab_home
from crab._contracts.config import Config
from crab._contracts.errors import ConfigError

AUTH_FILE_NAME = "auth.json"
REDACTED = "[redacted]"

MIN_SECRET_LENGTH = 8
"""Shorter values are not redacted: replacing every "1" or "yes" in output would do more harm."""

_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|TOKEN|SECRET|PASSWORD|DSN)$")
"""Environment variable names (and config keys) treated as secrets even when no config names them.

A ``DSN`` (database connection string, such as ``CRAB_POSTGRES_DSN``) may carry a password: the
whole string is a secret, and so is the password inside it, wherever it shows up on its own."""

_DSN_PASSWORD = re.compile(r"(?:^|\s)password\s*=\s*(?:'((?:[^'\\]|\\.)*)'|(\S+))")


def auth_path() -> Path:
    """Where keys live when not in the environment: ``$CRAB_HOME/auth.json``."""
    home: Path = crab_home()
    return home / AUTH_FILE_NAME


def read_auth(path: Path | None = None) -> dict[str, str]:
    """The auth file as provider name → key; empty when there is no file.

    A malformed file is a ``ConfigError`` naming the file but never quoting it (it holds keys).
    """
    target = auth_path() if path is None else path
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{target}: cannot read the auth file ({type(exc).__name__})") from None
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        raise ConfigError(
            f'{target}: the auth file is not valid JSON; it must be an object like {{"openai": "<key>"}}'
        ) from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ConfigError(f"{target}: the auth file must be a JSON object of provider name to key string")
    return dict(data)


def save_key(provider: str, key: str, path: Path | None = None) -> Path:
    """Store ``key`` for ``provider`` in the auth file, created (or rewritten) with mode 0600."""
    target = auth_path() if path is None else path
    data = read_auth(target)
    data[provider] = key
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    # Open with 0600 from the start: a chmod after writing would leave a window where others can read.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return target


def lookup_key(
    provider: str, env_var: str | None, env: Mapping[str, str] | None = None, path: Path | None = None
) -> str | None:
    """The key for ``provider``: ``env_var`` in the environment first, then the auth file."""
    environ = os.environ if env is None else env
    if env_var:
        value = environ.get(env_var, "").strip()
        if value:
            return value
    value = read_auth(path).get(provider, "").strip()
    return value or None


def missing_key_message(provider: str, env_var: str | None) -> str:
    """The one line shown when no key is found: which variable to set, or the file to use."""
    where = f"set {env_var}" if env_var else "set api_key_env in its config table"
    return f'{provider}: no API key found: {where} (or store it under "{provider}" in {auth_path()})'


def known_secrets(
    config: Config | None = None, env: Mapping[str, str] | None = None, path: Path | None = None
) -> list[str]:
    """Every secret value crab knows, longest first, for ``redact``.

    That is: variables named by any ``*_env`` key in a ``[plugins.*]`` table, variables whose
    names look like keys (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``), config values
    under keys named like that (``api_key = "..."`` anywhere) and in any ``headers`` table, and
    every value in the auth file.
    Never raises: redaction must not fail because a file is broken.
    """
    environ = os.environ if env is None else env
    names = {name for name in environ if _SECRET_NAME.search(name.upper())}
    values: set[str] = set()
    if config is not None:
        names.update(_env_names(config.data.get("plugins")))
        values.update(_secret_values(config.data))
    values.update(environ.get(name, "") for name in names)
    try:
        values.update(read_auth(path).values())
    except ConfigError:
        pass
    values.update(password for value in list(values) if (password := dsn_password(value)))
    return sorted((v for v in values if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def dsn_password(dsn: str) -> str | None:
    """The password inside a PostgreSQL-style connection string (URL or ``key=value``), if any."""
    if "://" in dsn:
        from urllib.parse import unquote, urlsplit

        try:
            password = urlsplit(dsn.strip()).password
        except ValueError:
            return None
        return unquote(password) if password else None
    match = _DSN_PASSWORD.search(dsn)
    if match is None:
        return None
    return match.group(1).replace("\\'", "'") if match.group(1) is not None else match.group(2)


def _env_names(node: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(key, str) and key.endswith("_env") and isinstance(value, str) and value:
                names.add(value)
            else:
                names.update(_env_names(value))
    return names


def _secret_values(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(value, str) and isinstance(key, str) and _SECRET_NAME.search(key.upper()):
                found.add(value)
            elif key == "headers" and isinstance(value, Mapping):  # Authorization, X-Api-Key…
                found.update(v for v in value.values() if isinstance(v, str))
            else:
                found.update(_secret_values(value))
    elif isinstance(node, list):
        for item in node:
            found.update(_secret_values(item))
    return found


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (of at least ``MIN_SECRET_LENGTH`` chars) replaced by ``[redacted]``."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_SECRET_LENGTH and secret in text:
            text = text.replace(secret, REDACTED)
    return text
