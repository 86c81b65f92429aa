"""The statistics of a report: Wilson intervals for pass rates, and which differences exceed the noise.

A pass-rate difference counts when Newcombe's interval for the difference of two proportions
(built from the two Wilson intervals) leaves out zero; a difference of means (cost, tokens, time)
when it is more than twice its standard error (Welch), which needs two runs on each side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Z = 1.959964  # 95 %


def wilson(passes: int, runs: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of ``passes`` out of ``runs`` (``(0, 1)`` for no runs)."""
    if runs <= 0:
        return 0.0, 1.0
    p = passes / runs
    denominator = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denominator
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == runs else min(1.0, centre + half)
    return low, high


def rate_difference(a: tuple[int, int], b: tuple[int, int], z: float = Z) -> tuple[float, float, float]:
    """``b``'s pass rate minus ``a``'s and Newcombe's interval for it (``(passes, runs)`` each)."""
    (pa, na), (pb, nb) = a, b
    if na == 0 or nb == 0:
        return 0.0, -1.0, 1.0
    ra, rb = pa / na, pb / nb
    la, ua = wilson(pa, na, z)
    lb, ub = wilson(pb, nb, z)
    d = rb - ra
    low = d - math.sqrt((rb - lb) ** 2 + (ua - ra) ** 2)
    high = d + math.sqrt((ub - rb) ** 2 + (ra - la) ** 2)
    return d, low, high


def rate_differs(a: tuple[int, int], b: tuple[int, int]) -> bool:
    _, low, high = rate_difference(a, b)
    return low > 0 or high < 0


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def mean_differs(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether the means differ by more than twice the standard error of their difference."""
    if len(a) < 2 or len(b) < 2:
        return False
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    se = math.sqrt(va / len(a) + vb / len(b))
    return abs(mb - ma) > 2 * se if se > 0 else ma != mb
