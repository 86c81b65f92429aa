"""How the whole suite is spread over pytest-xdist workers: slowest tests first, one at a time.

The README's test command runs ``--dist loadgroup``: each test goes to whichever worker is free,
so one long file no longer keeps a worker busy while the others sit idle, and tests marked
``slow`` are sent first, so none of them starts last. A file that names ``xdist_group`` (its
tests share a module fixture: built wheels, a venv, one eval run) keeps its tests on one worker.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: files stay whole


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    # xdist 3.8 groups by a suffix it writes to ``item._nodeid``, which pytest 9.2 no longer
    # reads: every xdist_group was silently spread over the workers. Group by file here instead.
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    root = config.rootpath

    @functools.cache
    def keeps_together(path: str) -> bool:
        try:
            return "xdist_group" in (root / path).read_text(encoding="utf-8")
        except OSError:
            return False

    class FilesThatShareStayTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if keeps_together(path) else nodeid

    return FilesThatShareStayTogether(config, log)
