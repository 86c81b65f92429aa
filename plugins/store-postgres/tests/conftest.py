"""One throwaway PostgreSQL server for the whole test session, and a fresh schema per test."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest
from crab_store_postgres.testing import TempCluster, find_binaries

_schemas = itertools.count(1)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[TempCluster]:
    binaries = find_binaries()
    if binaries is None:
        message = "no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql"
        if os.environ.get("CI"):
            pytest.fail(f"{message} (CI installs them: .ci/run)")
        pytest.skip(message)
    cluster = TempCluster(binaries).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_dsn(pg_cluster: TempCluster) -> str:
    return pg_cluster.dsn()


@pytest.fixture
def pg_schema() -> str:
    return f"t{os.getpid()}_{next(_schemas)}"
