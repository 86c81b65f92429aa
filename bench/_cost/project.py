"""The small real Python project the scripted sessions work on (a statistics package whose median
is wrong for even lengths), written into a fresh workspace for each run."""

from __future__ import annotations

from pathlib import Path

STATS = '''\
"""Small statistics helpers used by the report and the command line."""

from __future__ import annotations

from collections.abc import Sequence


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean of a non-empty sequence."""
    if not values:
        raise ValueError("mean of an empty sequence")
    return sum(values) / len(values)


def median(values: Sequence[float]) -> float:
    """Middle value of a non-empty sequence; the mean of the two middle ones for even lengths."""
    if not values:
        raise ValueError("median of an empty sequence")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle] + ordered[middle + 1]) / 2


def variance(values: Sequence[float]) -> float:
    """Sample variance (n - 1 in the denominator)."""
    centre = mean(values)
    return sum((v - centre) ** 2 for v in values) / (len(values) - 1)


def stdev(values: Sequence[float]) -> float:
    """Sample standard deviation."""
    return variance(values) ** 0.5


def spread(values: Sequence[float]) -> tuple[float, float]:
    """Smallest and largest value."""
    if not values:
        raise ValueError("spread of an empty sequence")
    return min(values), max(values)
'''

PARSE = '''\
"""Reading numbers from text: one value per line, or one column of a CSV file."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path


class ParseError(ValueError):
    """A line that is not a number; carries its line number."""

    def __init__(self, line: int, text: str) -> None:
        super().__init__(f"line {line}: not a number: {text!r}")
        self.line = line
        self.text = text


def numbers(lines: Iterable[str]) -> list[float]:
    """The numbers of ``lines``: blank lines and lines starting with # are skipped."""
    out: list[float] = []
    for index, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        try:
            out.append(float(text))
        except ValueError:
            raise ParseError(index, text) from None
    return out


def column(path: Path, name: str) -> list[float]:
    """The numbers in column ``name`` of the CSV file at ``path`` (with a header row)."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None or name not in reader.fieldnames:
            raise KeyError(f"no column {name!r} in {path}")
        return numbers(row[name] or "" for row in reader)
'''

REPORT = '''\
"""The text report: one line per statistic, aligned."""

from __future__ import annotations

from collections.abc import Sequence

from calc import stats

ROWS = (
    ("count", lambda v: float(len(v))),
    ("mean", stats.mean),
    ("median", stats.median),
    ("stdev", stats.stdev),
)


def report(values: Sequence[float], title: str = "values") -> str:
    """A short report of ``values`` under ``title``."""
    lines = [title, "-" * len(title)]
    for name, compute in ROWS:
        lines.append(f"{name:<8}{compute(values):>12.2f}")
    low, high = stats.spread(values)
    lines.append(f"{'range':<8}{low:>12.2f} .. {high:.2f}")
    return "\\n".join(lines)
'''

CLI = '''\
"""Command line: ``python -m calc FILE [--column NAME]`` prints the report of a file's numbers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from calc.parse import ParseError, column, numbers
from calc.report import report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="calc", description="Statistics of the numbers in a file.")
    parser.add_argument("file", type=Path, help="a text file with one number a line, or a CSV file")
    parser.add_argument("--column", help="the CSV column to read (the file is then read as CSV)")
    args = parser.parse_args(argv)
    try:
        if args.column:
            values = column(args.file, args.column)
        else:
            values = numbers(args.file.read_text(encoding="utf-8").splitlines())
    except (OSError, KeyError, ParseError) as exc:
        print(f"calc: {exc}", file=sys.stderr)
        return 2
    if not values:
        print("calc: no numbers in the file", file=sys.stderr)
        return 2
    print(report(values, title=args.file.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

TESTS = """\
import unittest

from calc import stats


class StatsTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(stats.mean([1, 2, 3, 4]), 2.5)

    def test_median_odd(self):
        self.assertEqual(stats.median([3, 1, 2]), 2)

    def test_median_even(self):
        self.assertEqual(stats.median([4, 1, 3, 2]), 2.5)

    def test_variance(self):
        self.assertAlmostEqual(stats.variance([2, 4, 4, 4, 5, 5, 7, 9]), 4.571428571428571)

    def test_empty(self):
        with self.assertRaises(ValueError):
            stats.mean([])


if __name__ == "__main__":
    unittest.main()
"""

README = """\
# calc

Statistics of the numbers in a file: count, mean, median, standard deviation and range.

    python -m calc numbers.txt
    python -m calc data.csv --column price

Run the tests with `python3 -m unittest discover -s tests -t .` from this folder.
"""

FILES = {
    "README.md": README,
    "calc/__init__.py": '"""calc: statistics of the numbers in a file."""\n',
    "calc/__main__.py": "import sys\n\nfrom calc.cli import main\n\nsys.exit(main())\n",
    "calc/stats.py": STATS,
    "calc/parse.py": PARSE,
    "calc/report.py": REPORT,
    "calc/cli.py": CLI,
    "tests/__init__.py": "",
    "tests/test_stats.py": TESTS,
}


def write_project(root: Path) -> None:
    """The project's files under ``root`` (which exists and is empty)."""
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
