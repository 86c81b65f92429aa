"""Errors a user can meet, each one line saying what is wrong and how to fix it; the CLI prints
``str(error)`` and exits with ``error.exit_code``, nothing else."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crab._contracts.events import ErrorKind


class CrabError(Exception):
    """Base of crab's user-facing errors."""

    exit_code = 1


class ConfigError(CrabError):
    """Malformed or inconsistent configuration, a missing key, an unknown name."""

    exit_code = 2


class UsageError(CrabError):
    """The command line asked for something that cannot work."""

    exit_code = 2


class PluginError(CrabError):
    """A plugin failed (only raised when ``CRAB_STRICT_PLUGINS=1``; otherwise it is reported)."""

    exit_code = 2


class ProviderError(CrabError):
    """A model back-end failed. ``kind`` tells the loop what it can do (retry, compact, stop)."""

    def __init__(self, message: str, kind: ErrorKind = "unknown", retryable: bool = False) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.retryable = retryable


class ContextOverflowError(ProviderError):
    """The request did not fit the model's context window; compacting (a handoff) may help."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="context_overflow", retryable=False)


class StoreError(CrabError):
    """Session storage failed or holds data this crab cannot read."""


class ToolError(Exception):
    """Raise inside a tool to return an error result with this message to the model."""


class ChannelError(CrabError):
    """A delivery or keyed session that cannot be had: unknown channel, no delivery, not running."""
