"""How the whole suite is ordered for pytest-xdist: the slowest tests start first.

The README's test command runs ``--dist loadgroup``: tests go to workers one at a time (a file
that shares module state keeps its tests on one worker with ``xdist_group``), so a long test that
starts last would keep one worker busy while the others sit idle. Tests marked ``slow`` go to the
front; the order within each part is collection order.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: files stay whole
