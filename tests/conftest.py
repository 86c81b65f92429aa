"""Fixtures shared by the repository-level tests: one throwaway PostgreSQL server per test session."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

_schemas = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A DSN of a server started for this test session (crab-store-postgres's ``TempCluster``)."""
    from crab_store_postgres.testing import TempCluster, find_binaries

    binaries = find_binaries()
    if binaries is None:
        if os.environ.get("CI"):
            pytest.fail("no PostgreSQL server binaries in CI (.ci/run installs postgresql)")
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql")
    cluster = TempCluster(binaries).start()
    try:
        yield cluster.dsn()
    finally:
        cluster.stop()


@pytest.fixture
def postgres_schema() -> str:
    """A schema name no other test uses."""
    return f"repo{os.getpid()}_{next(_schemas)}"
