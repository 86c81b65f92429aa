"""Turning filesystem failures (permission denied, disk full…) into error results for the model."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from crab import ToolError


@contextmanager
def os_errors(what: str) -> Iterator[None]:
    """Re-raise any ``OSError`` inside as a ``ToolError`` naming ``what`` and the system's reason."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ToolError(f"{what}: {reason}") from None
