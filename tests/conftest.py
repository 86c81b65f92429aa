"""Fixtures shared by the repository-level tests: one throwaway PostgreSQL server per test session,
and the wheels and sdists of every package of the repository, built once per session.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_schemas = itertools.count(1)
ROOT = Path(__file__).resolve().parents[1]
REPO_PACKAGES = [
    ROOT / "core",
    ROOT / "testing",
    *sorted(p for p in (ROOT / "kits").iterdir() if (p / "pyproject.toml").is_file()),
    *sorted(p for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").is_file()),
]

# hatchling's PEP 517 hooks (what ``pip wheel`` and ``python -m build`` call), in each package's
# folder, all in one interpreter: pip would start two or three per package.
_BUILD = """
import os, sys
import hatchling.build as backend
wheels, sdists, *folders = sys.argv[1:]
for folder in folders:
    os.chdir(folder)
    backend.build_wheel(wheels)
    if sdists:
        backend.build_sdist(sdists)
"""


def build_with_hatchling(folders: list[Path], wheels: Path, sdists: Path | None = None) -> None:
    """A wheel (and an sdist, given ``sdists``) of each folder, by hatchling in one interpreter, offline."""
    wheels.mkdir(parents=True, exist_ok=True)
    if sdists is not None:
        sdists.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-c", _BUILD, str(wheels), str(sdists or ""), *map(str, folders)]
    result = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.fixture(scope="session")
def hatchling_builder() -> Callable[..., None]:
    """``build_with_hatchling(folders, wheels, sdists=None)``, for test modules (conftest is not importable)."""
    return build_with_hatchling


@pytest.fixture(scope="session")
def repo_builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Folders holding a wheel and an sdist of every package in ``REPO_PACKAGES`` (built offline, no isolation).

    Shared by test_plugin_packages and test_distribution, which name one ``xdist_group`` so one
    worker builds them once. Read them; copy what you change.
    """
    root = tmp_path_factory.mktemp("repo-builds")
    wheels, sdists = root / "wheels", root / "sdists"
    build_with_hatchling(REPO_PACKAGES, wheels, sdists)
    return wheels, sdists


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
