"""``CRAB_POSTGRES_DSN`` is read by crab-store-postgres itself (core names no plugin's variable)."""

from __future__ import annotations

from crab_store_postgres.environ import postgres_dsn


def test_the_dsn_variable_is_stripped_and_blank_means_unset():
    assert postgres_dsn({"CRAB_POSTGRES_DSN": " postgresql://h/db "}) == "postgresql://h/db"
    assert postgres_dsn({"CRAB_POSTGRES_DSN": " "}) is None
    assert postgres_dsn({}) is None
