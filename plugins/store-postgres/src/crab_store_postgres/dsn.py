"""Where the connection string comes from, what to call the server in a message, and hiding passwords.

The DSN is looked up in order: ``CRAB_POSTGRES_DSN`` (``crab_store_postgres.environ``), the auth file's
``"postgres"`` entry, then ``[plugins.store-postgres] dsn`` in the user's config (trust-only, so a
project's config cannot point crab at another database). A DSN may hold a password: every message
this plugin writes names the server by host and port only, or shows the DSN with the password
replaced (``redact_dsn``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crab.config import crab_home
from crab.secrets import REDACTED, lookup_key

from crab_store_postgres.environ import postgres_dsn

AUTH_ENTRY = "postgres"
ENV_VARIABLE = "CRAB_POSTGRES_DSN"
"""Named in messages only: ``crab_store_postgres.environ`` reads it."""

_URL_PASSWORD = re.compile(r"^(\w+://[^:/?#@]*):[^@/?#]*@")
_KV_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)")


@dataclass(frozen=True, slots=True)
class DsnSource:
    """A connection string and the setting it came from (named in every connection error)."""

    dsn: str | None
    setting: str


def find_dsn(settings: Mapping[str, Any], env: Mapping[str, str] | None = None) -> DsnSource:
    """The DSN to use and where it was set; ``dsn`` None when no setting gives one."""
    from_env = postgres_dsn(env)
    if from_env:
        return DsnSource(from_env, ENV_VARIABLE)
    auth_file = crab_home() / "auth.json"
    try:
        from_auth = lookup_key(AUTH_ENTRY, None)
    except Exception:  # a broken auth file is reported where keys are read; here it only has no DSN
        from_auth = None
    if from_auth:
        return DsnSource(from_auth, f'the "{AUTH_ENTRY}" entry of {auth_file}')
    configured = str(settings.get("dsn") or "").strip()
    if configured:
        return DsnSource(configured, "[plugins.store-postgres] dsn")
    return DsnSource(
        None,
        f'{ENV_VARIABLE}, the "{AUTH_ENTRY}" entry of {auth_file} or [plugins.store-postgres] dsn',
    )


def redact_dsn(dsn: str) -> str:
    """``dsn`` with its password (URL or ``password=`` form) replaced by ``[redacted]``."""
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{REDACTED}@", dsn)
    return _KV_PASSWORD.sub(lambda m: f"{m.group(1)}{REDACTED}", text)


def server_name(dsn: str) -> str:
    """``host:port`` (or the socket folder) of a DSN, for messages; never its password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(dsn)
    except Exception:
        return "the server in that DSN (it does not parse as a PostgreSQL connection string)"
    host = str(parts.get("host") or parts.get("hostaddr") or "the local socket")
    port = str(parts.get("port") or "5432")
    database = parts.get("dbname")
    where = f"{host} port {port}" if host.startswith("/") else f"{host}:{port}"
    return f"{where}, database {database}" if database else where
