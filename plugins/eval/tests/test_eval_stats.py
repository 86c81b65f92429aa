"""The report's statistics: Wilson intervals, and which differences count as more than the noise."""

from __future__ import annotations

import pytest
from crab_eval.stats import mean_differs, rate_differs, wilson


def test_wilson_matches_the_published_values():
    low, high = wilson(10, 10)
    assert (round(low, 3), high) == (0.722, 1.0)
    low, high = wilson(5, 10)
    assert (round(low, 3), round(high, 3)) == (0.237, 0.763)
    assert wilson(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("a", "b", "differs"),
    [((10, 10), (0, 10), True), ((9, 10), (8, 10), False), ((1, 1), (0, 1), False), ((30, 30), (20, 30), True)],
)
def test_a_pass_rate_difference_counts_only_beyond_the_noise(a, b, differs):
    assert rate_differs(a, b) is differs


def test_a_mean_difference_needs_two_runs_a_side_and_twice_its_error():
    assert not mean_differs([1.0], [5.0])
    assert mean_differs([1.0, 1.1, 0.9], [5.0, 5.1, 4.9])
    assert not mean_differs([1.0, 3.0, 2.0], [2.0, 1.0, 3.0])
