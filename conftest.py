"""How the whole suite is spread over pytest-xdist workers: slowest tests first, one at a time.

The README's test command runs ``--dist loadgroup``: each test goes to whichever worker is free,
so one long file no longer keeps a worker busy while the others sit idle, and tests marked
``slow`` are sent first, so none of them starts last. The files that name one ``xdist_group``
(tests that share a module fixture or processes) run on one worker. The workspace's sources are
compiled once before the first test, so the ~1,000 ``crab`` processes the suite starts read
bytecode instead of each compiling crab again.
"""

from __future__ import annotations

import compileall
import functools
import os
import re
from typing import Any

import pytest

_GROUP = re.compile(r"xdist_group\(\s*(?:name=)?[\"']([^\"']+)[\"']")


def pytest_sessionstart(session: pytest.Session) -> None:
    # Under PYTHONDONTWRITEBYTECODE (set on these machines) nothing writes __pycache__, and every
    # `crab` a test starts compiled core and its plugins from source: ~0.15 s of CPU each
    # (`crab run` 0.44 s -> 0.29 s). Once, before the workers start; stale files are recompiled.
    if hasattr(session.config, "workerinput") or not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    root = session.config.rootpath
    sources = [root / "core" / "src", root / "testing" / "src", *root.glob("kits/*/src"), *root.glob("plugins/*/src")]
    for source in sources:
        compileall.compile_dir(source, quiet=2, workers=1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Stable: the rest keeps its order, but a file with only some tests marked slow is split (its
    # slow ones first), so a module-scoped fixture there would be set up twice without xdist.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: plugins' tests also run without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    # xdist 3.8 groups by a suffix it writes to ``item._nodeid``, which pytest 9.2 no longer
    # reads: every xdist_group was silently spread over the workers. Group here, by the name a file gives.
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    root = config.rootpath

    @functools.cache
    def group_of(path: str) -> str | None:
        try:
            found = _GROUP.search((root / path).read_text(encoding="utf-8"))
        except OSError:
            return None
        return found.group(1) if found else None

    class FilesThatShareStayTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid.split("::", 1)[0]) or nodeid

    return FilesThatShareStayTogether(config, log)
