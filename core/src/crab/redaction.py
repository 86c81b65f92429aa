"""Keeping secrets out of storage: find every key or token crab knows and mask it in payloads.

Secrets are values of environment variables whose names look secret (``*_API_KEY``, ``*_TOKEN``,
``*_SECRET``, ``*_PASSWORD``), of config keys named like that (any table), of every variable
named by an ``api_key_env`` / ``token_env`` config key, and of ``$CRAB_HOME/auth.json``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from crab.config import Config, crab_home

MASK = "[redacted]"
MIN_SECRET_LENGTH = 8
_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_ENV_POINTER = re.compile(r"(api_key|token|secret)_env$", re.IGNORECASE)


def _config_secrets(node: Any, env: Mapping[str, str]) -> Iterable[str]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(value, str) and _ENV_POINTER.search(str(key)):
                if env.get(value):
                    yield env[value]
            elif isinstance(value, str) and _SECRET_NAME.search(str(key)):
                yield value
            else:
                yield from _config_secrets(value, env)
    elif isinstance(node, list):
        for item in node:
            yield from _config_secrets(item, env)


def _auth_file_secrets() -> Iterable[str]:
    path = crab_home() / "auth.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, Mapping):
        return []
    found: list[str] = []
    for value in data.values():
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, Mapping):
            found.extend(v for v in value.values() if isinstance(v, str))
    return found


def known_secrets(config: Config | None = None, env: Mapping[str, str] | None = None) -> list[str]:
    """Every secret value crab can see, longest first (so overlapping secrets mask fully)."""
    env = os.environ if env is None else env
    found = {value for name, value in env.items() if _SECRET_NAME.search(name) and value}
    if config is not None:
        found.update(_config_secrets(config.data, env))
    found.update(_auth_file_secrets())
    return sorted((s for s in found if len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True)


class Redactor:
    """Masks a fixed set of secrets in strings and in nested JSON-like payloads."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = [s for s in secrets if len(s) >= MIN_SECRET_LENGTH]
        self._pattern = re.compile("|".join(re.escape(s) for s in self.secrets)) if self.secrets else None

    def text(self, value: str) -> str:
        if self._pattern is None or not value:
            return value
        return self._pattern.sub(MASK, value)

    def payload(self, value: Any) -> Any:
        """A copy of ``value`` with every string (keys included) masked."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.payload(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.payload(v) for v in value]
        return value
