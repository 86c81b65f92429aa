"""The one environment variable crab-store-postgres reads: ``CRAB_POSTGRES_DSN``, read here only.

It was core's (``crab.postgres_dsn``, API 1.2) until core stopped holding code for one plugin. The
value may hold a password: core redacts every ``*_DSN`` variable, and the password inside it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

POSTGRES_DSN = "CRAB_POSTGRES_DSN"


def postgres_dsn(env: Mapping[str, str] | None = None) -> str | None:
    """``CRAB_POSTGRES_DSN`` stripped, or None when it is unset or blank (``env``: default ``os.environ``)."""
    value = (os.environ if env is None else env).get(POSTGRES_DSN, "").strip()
    return value or None
