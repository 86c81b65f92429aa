"""Migrations: numbered SQL files shipped in ``crab_store_postgres/migrations``, applied in order.

``NNNN_name.sql`` is migration NNNN. Applied versions are rows of ``schema_version`` in the
configured schema. Several workers starting together take a transaction-level advisory lock
(keyed by the schema name) first, so one applies what is missing and the others find it done; a
database with a migration newer than this package knows is refused rather than guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from crab import StoreError

if TYPE_CHECKING:
    from psycopg import AsyncConnection

_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    """Every migration shipped in the package, by version."""
    found = []
    for item in resources.files("crab_store_postgres").joinpath("migrations").iterdir():
        match = _FILE.match(item.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2).replace("_", " "), item.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise StoreError("crab-store-postgres is installed without its numbered migrations (reinstall it)")
    return found


async def migrate(conn: AsyncConnection[tuple[object, ...]], schema: str) -> list[int]:
    """Create ``schema`` if needed and apply pending migrations in one transaction; returns all applied."""
    from psycopg import sql

    known = migrations()
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"crab-store-postgres:{schema}",))
        cur = await conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        if await cur.fetchone() is None:
            await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        await conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema)))
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version "
            "(version integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())"
        )
        cur = await conn.execute("SELECT version FROM schema_version")
        applied = {int(row[0]) for row in await cur.fetchall()}  # type: ignore[call-overload]
        newer = applied - {m.version for m in known}
        if newer:
            raise StoreError(
                f"the PostgreSQL schema {schema!r} has migration {max(newer)}, newer than this "
                "crab-store-postgres knows; upgrade crab-store-postgres"
            )
        for migration in known:
            if migration.version in applied:
                continue
            await conn.execute(migration.sql.encode("utf-8"))
            await conn.execute(
                "INSERT INTO schema_version (version, name) VALUES (%s, %s)", (migration.version, migration.name)
            )
            applied.add(migration.version)
    return sorted(applied)
