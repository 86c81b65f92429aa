"""Keeping secrets out of storage: mask every key or token crab knows in nested payloads.

Which values are secret is ``crab.auth.known_secrets``'s business; this module masks them in the
JSON-like payloads the loop appends to a store, keys and values alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from crab.auth import MIN_SECRET_LENGTH, REDACTED


class Redactor:
    """Masks a fixed set of secrets in strings and in nested JSON-like payloads."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = sorted((s for s in secrets if len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(s) for s in self.secrets)) if self.secrets else None

    def text(self, value: str) -> str:
        if self._pattern is None or not value:
            return value
        return self._pattern.sub(REDACTED, value)

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
