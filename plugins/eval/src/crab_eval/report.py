"""The report of an eval: per task and configuration, and per configuration over the suite.

Built from the finished runs only (an interrupted eval reports what finished), as plain data that
is also the ``--json`` document; the terminal table and the HTML page render this data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crab_eval.runner import RunRecord
from crab_eval.stats import mean, mean_differs, rate_difference, rate_differs, wilson

METRICS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost",
    "wall_seconds",
    "model_calls",
    "tool_calls",
    "tool_errors",
)


def _values(runs: Sequence[RunRecord], metric: str) -> list[float] | None:
    values = [getattr(r, metric) for r in runs]
    if any(v is None for v in values):
        return None  # a run without a price: the cost is not known
    return [float(v) for v in values]


def summarize(runs: Sequence[RunRecord]) -> dict[str, Any]:
    passes = sum(r.passed for r in runs)
    low, high = wilson(passes, len(runs))
    cell: dict[str, Any] = {
        "runs": len(runs),
        "passes": passes,
        "pass_rate": passes / len(runs) if runs else None,
        "interval": [low, high],
    }
    for metric in METRICS:
        values = _values(runs, metric)
        cell[metric] = mean(values) if values is not None else None
    return cell


def _compare(base: Sequence[RunRecord], other: Sequence[RunRecord]) -> dict[str, Any]:
    """Which of ``other``'s figures differ from ``base``'s by more than the noise."""
    a = (sum(r.passed for r in base), len(base))
    b = (sum(r.passed for r in other), len(other))
    difference, low, high = rate_difference(a, b)
    marked = {"pass_rate": rate_differs(a, b)} if a[1] and b[1] else {"pass_rate": False}
    for metric in METRICS:
        va, vb = _values(base, metric), _values(other, metric)
        marked[metric] = va is not None and vb is not None and mean_differs(va, vb)
    return {"pass_rate_difference": difference, "difference_interval": [low, high], "marked": marked}


def build_report(
    suite: str, tasks: Sequence[str], configs: Sequence[str], records: Sequence[RunRecord], planned: int
) -> dict[str, Any]:
    by_cell: dict[tuple[str, str], list[RunRecord]] = {}
    for record in records:
        by_cell.setdefault((record.task, record.config), []).append(record)
    cells = []
    for task in tasks:
        for config in configs:
            runs = sorted(by_cell.get((task, config), []), key=lambda r: r.repetition)
            cell = {"task": task, "config": config, **summarize(runs)}
            cell["sessions"] = [r.session for r in runs if r.session]
            cell["failures"] = [f"run {r.repetition + 1}: {'; '.join(r.reasons)}" for r in runs if not r.passed]
            if config != configs[0]:
                cell["versus"] = {"config": configs[0], **_compare(by_cell.get((task, configs[0]), []), runs)}
            cells.append(cell)
    totals = []
    for config in configs:
        runs = [r for r in records if r.config == config]
        total = {"config": config, **summarize(runs)}
        if config != configs[0]:
            total["versus"] = {"config": configs[0], **_compare([r for r in records if r.config == configs[0]], runs)}
        totals.append(total)
    return {
        "v": 1,
        "suite": suite,
        "configurations": list(configs),
        "tasks": list(tasks),
        "planned_runs": planned,
        "finished_runs": len(records),
        "cells": cells,
        "totals": totals,
        "runs": [r.to_dict() for r in records],
    }


def marks(cell: dict[str, Any]) -> list[str]:
    """The figures of a cell that differ from the first configuration's by more than the noise."""
    versus = cell.get("versus")
    if not versus:
        return []
    return [name for name, marked in versus["marked"].items() if marked]
