"""The environment variables crab-temporal reads, in this one place."""

from __future__ import annotations

import os

API_KEY = "CRAB_TEMPORAL_API_KEY"


def api_key() -> str | None:
    """Temporal Cloud's API key from the environment (it wins over ``[plugins.temporal] api_key``)."""
    return os.environ.get(API_KEY) or None
