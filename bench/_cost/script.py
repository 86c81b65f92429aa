"""The scripted sessions: each prompt and the model replies that answer it, step by step.

The fake models are stateless: a request is placed in the script by the last user message (a
prompt of the script: its first step) or by the last tool result (its call id names the step it
answered: the next step follows), so ``crab run -c`` in a new process, or a compacted history,
continues where it was. Compaction's summary requests are answered with ``SUMMARY``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

TESTS = "python3 -m unittest discover -s tests -t . 2>&1 | sed -E 's/ in [0-9.]+s$//'"
"""The test run (the timing left out so every run's output is the same)."""

CALL_ID = re.compile(r"bench_(\d{3})_\d")
SUMMARISE = re.compile(r"\bsummari[sz]e\b", re.IGNORECASE)
SUMMARY_WORD = re.compile(r"\bsummary\b", re.IGNORECASE)

SUMMARY = (
    "Goal: the user works on calc, a small statistics package (calc/stats.py, parse.py, report.py, "
    "cli.py; tests in tests/, run with python3 -m unittest discover -s tests -t .).\n"
    "Progress: median was wrong for even lengths (calc/stats.py used middle and middle + 1); fixed to "
    "middle - 1 and middle, tests/test_median_edge.py added, all tests pass. The CSV path goes "
    "column() -> numbers() -> report(); the user wants more options on the command line.\n"
    "Decisions: keep changes small, unittest only, no new dependencies.\n"
    "Open: the next request of the user."
)


@dataclass(frozen=True)
class Step:
    """One model reply: text, then tool calls (name, arguments)."""

    text: str
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()


def call(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    return name, arguments


@dataclass(frozen=True)
class Prompt:
    text: str
    steps: tuple[Step, ...]
    pause_before: float = 0.0
    """Seconds of the fake clock that pass before this prompt (a user away)."""


@dataclass
class Script:
    """Prompts numbered into one list of steps (global step numbers go into the call ids)."""

    prompts: list[Prompt]
    steps: list[Step] = field(default_factory=list)
    first: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for prompt in self.prompts:
            assert not self.asks_for_summary(prompt.text), "a prompt would look like a summary request"
            assert prompt.steps[-1].calls == (), "a prompt's last reply ends the turn"
            self.first[prompt.text] = len(self.steps)
            self.steps.extend(prompt.steps)

    @property
    def requests(self) -> int:
        return len(self.steps)

    def asks_for_summary(self, text: str) -> bool:
        """Whether ``text`` (the last user block, or a system prompt's start) asks for a compaction
        summary: it says "summarise" (a transcript to summarise, as crab's summary prompt does),
        or it says "summary" and quotes no prompt of the script (an instruction appended to the
        session's own request). Neither the prompts nor crab's own prompt say either."""
        return bool(SUMMARISE.search(text)) or (bool(SUMMARY_WORD.search(text)) and self.for_prompt(text) is None)

    def after_result(self, call_id: str) -> int | None:
        """The step after the one whose call has this id, or None for an id not the script's."""
        found = CALL_ID.search(call_id)
        return int(found.group(1)) + 1 if found else None

    def for_prompt(self, text: str) -> int | None:
        """The first step of the prompt ``text`` contains, or None."""
        for prompt, index in self.first.items():
            if prompt in text:
                return index
        return None


FIX = ("(ordered[middle] + ordered[middle + 1]) / 2", "(ordered[middle - 1] + ordered[middle]) / 2")

EDGE_TESTS = """\
import unittest

from calc import stats


class MedianEdgeTest(unittest.TestCase):
    def test_single_value(self):
        self.assertEqual(stats.median([7]), 7)

    def test_unsorted_even_length(self):
        self.assertEqual(stats.median([10, 2, 8, 4]), 6)


if __name__ == "__main__":
    unittest.main()
"""

FIND = Prompt(
    "The tests of this project fail. Find the cause of the failing test and explain it; do not change anything yet.",
    (
        Step("", (call("ls"),)),
        Step("A package and its tests. Running them first.", (call("bash", command=TESTS),)),
        Step("", (call("read", path="tests/test_stats.py"),)),
        Step("test_median_even expects 2.5 for [4, 1, 3, 2]. Where is median?", (call("grep", pattern="def median"),)),
        Step("", (call("read", path="calc/stats.py"),)),
        Step("", (call("grep", pattern=r"median\(", path="calc"),)),
        Step(
            "The failing test is `test_median_even` (tests/test_stats.py:13): `median([4, 1, 3, 2])` returns 3.5, "
            "not 2.5. In calc/stats.py:23 the even case averages `ordered[middle]` and `ordered[middle + 1]`; "
            "for four values `middle` is 2, so it takes the third and fourth values (3 and 4) instead of the "
            "second and third (2 and 3). It should average `ordered[middle - 1]` and `ordered[middle]`. "
            "The report uses median too, so its output is wrong for even counts as well. Nothing changed yet."
        ),
    ),
)

FIX_IT = Prompt(
    "Fix it.",
    (
        Step("", (call("read", path="calc/stats.py", offset=15, limit=10),)),
        Step("", (call("edit", path="calc/stats.py", edits=[{"old": FIX[0], "new": FIX[1]}]),)),
        Step("", (call("bash", command=TESTS),)),
        Step("", (call("grep", pattern="middle", path="calc/stats.py"),)),
        Step(
            "Fixed calc/stats.py:23: the even case now averages `ordered[middle - 1]` and `ordered[middle]`. "
            "`python3 -m unittest discover -s tests -t .` runs 5 tests, all pass."
        ),
    ),
)

ADD_TEST = Prompt(
    "Add a test for the median of a single value and of an unsorted list of even length, then run the tests.",
    (
        Step("", (call("read", path="tests/test_stats.py"),)),
        Step("", (call("write", path="tests/test_median_edge.py", content=EDGE_TESTS),)),
        Step("", (call("bash", command=TESTS),)),
        Step(
            "",
            (
                call(
                    "edit",
                    path="tests/test_median_edge.py",
                    edits=[
                        {
                            "old": "        self.assertEqual(stats.median([10, 2, 8, 4]), 6)\n",
                            "new": "        self.assertEqual(stats.median([10, 2, 8, 4]), 6)\n"
                            "        self.assertEqual(stats.median([1.5, 0.5]), 1.0)\n",
                        }
                    ],
                ),
            ),
        ),
        Step("", (call("bash", command=TESTS),)),
        Step(
            "Added tests/test_median_edge.py with `test_single_value` (median([7]) is 7) and "
            "`test_unsorted_even_length` ([10, 2, 8, 4] gives 6, [1.5, 0.5] gives 1.0). "
            "All 7 tests pass."
        ),
    ),
)

SHORT = [FIND, FIX_IT, ADD_TEST]
"""Find a failing test's cause, fix it, add a test: 18 model requests."""

SAMPLE = "name,price\nbolt,0.25\nnut,0.10\nwasher,0.05\nscrew,0.30\n"

PRECISION_REPORT = (
    (
        'def report(values: Sequence[float], title: str = "values") -> str:\n'
        '    """A short report of ``values`` under ``title``."""\n',
        'def report(values: Sequence[float], title: str = "values", precision: int = 2) -> str:\n'
        '    """A short report of ``values`` under ``title``, with ``precision`` decimals."""\n',
    ),
    (
        'lines.append(f"{name:<8}{compute(values):>12.2f}")',
        'lines.append(f"{name:<8}{compute(values):>12.{precision}f}")',
    ),
    (
        "lines.append(f\"{'range':<8}{low:>12.2f} .. {high:.2f}\")",
        "lines.append(f\"{'range':<8}{low:>12.{precision}f} .. {high:.{precision}f}\")",
    ),
)

PARSE_TESTS = """\
import unittest

from calc.parse import ParseError, numbers


class NumbersTest(unittest.TestCase):
    def test_blank_lines_and_comments(self):
        self.assertEqual(numbers(["1", "", "# note", " 2.5 "]), [1.0, 2.5])

    def test_bad_number_names_its_line(self):
        with self.assertRaises(ParseError) as caught:
            numbers(["1", "two"])
        self.assertEqual(caught.exception.line, 2)


if __name__ == "__main__":
    unittest.main()
"""

FLOW = Prompt(
    "Read the parser, the report and the command line, and tell me how a CSV file flows through to the report.",
    (
        Step("", (call("ls", path="calc"),)),
        Step("", (call("read", path="calc/cli.py"),)),
        Step("", (call("read", path="calc/parse.py"),)),
        Step("", (call("read", path="calc/report.py"),)),
        Step("", (call("grep", pattern="^def ", path="calc"),)),
        Step("", (call("read", path="README.md"),)),
        Step(
            "`python -m calc data.csv --column price` goes to `main` (calc/cli.py:13), which calls "
            "`column(path, name)` (calc/parse.py:35): a `csv.DictReader` checks the header has the column, "
            "then each row's cell goes through `numbers` (calc/parse.py:20), which skips blank and # lines "
            "and raises `ParseError` with the line number for anything else that is not a float. "
            "The list goes to `report` (calc/report.py:17), which prints count, mean, median and stdev "
            "with two decimals, then the range. Errors print one `calc:` line and exit 2."
        ),
    ),
)

PRECISION = Prompt(
    "Add a --precision option to the command line that sets the number of decimals in the report.",
    (
        Step("", (call("read", path="calc/report.py"),)),
        Step("", (call("edit", path="calc/report.py", edits=[{"old": o, "new": n} for o, n in PRECISION_REPORT]),)),
        Step("", (call("read", path="calc/cli.py", offset=13, limit=20),)),
        Step(
            "",
            (
                call(
                    "edit",
                    path="calc/cli.py",
                    edits=[
                        {
                            "old": '    parser.add_argument("--column", help="the CSV column to read (the file is then read as CSV)")\n',
                            "new": '    parser.add_argument("--column", help="the CSV column to read (the file is then read as CSV)")\n'
                            '    parser.add_argument("--precision", type=int, default=2, help="decimals in the report")\n',
                        },
                        {
                            "old": "print(report(values, title=args.file.name))",
                            "new": "print(report(values, title=args.file.name, precision=args.precision))",
                        },
                    ],
                ),
            ),
        ),
        Step("", (call("write", path="data/sample.csv", content=SAMPLE),)),
        Step("", (call("bash", command="python3 -m calc data/sample.csv --column price --precision 3"),)),
        Step("", (call("bash", command=TESTS),)),
        Step(
            "Added `--precision N` (default 2): calc/cli.py:19 declares it and passes it to `report`, whose "
            "new `precision` parameter (calc/report.py:17) sets the decimals of every line. "
            "`python3 -m calc data/sample.csv --column price --precision 3` prints three decimals; the 7 tests pass."
        ),
    ),
)

PARSER_TESTS = Prompt(
    "Write tests for the parser: blank lines, comments, and a line that is not a number.",
    (
        Step("", (call("read", path="calc/parse.py", offset=1, limit=32),)),
        Step("", (call("glob", pattern="tests/*.py"),)),
        Step("", (call("write", path="tests/test_parse.py", content=PARSE_TESTS),)),
        Step("", (call("bash", command=TESTS),)),
        Step("", (call("grep", pattern="ParseError", path="calc"),)),
        Step(
            "",
            (
                call(
                    "edit",
                    path="tests/test_parse.py",
                    edits=[
                        {
                            "old": "        self.assertEqual(caught.exception.line, 2)\n",
                            "new": "        self.assertEqual(caught.exception.line, 2)\n"
                            '        self.assertEqual(caught.exception.text, "two")\n',
                        }
                    ],
                ),
            ),
        ),
        Step("", (call("bash", command=TESTS),)),
        Step(
            "Added tests/test_parse.py: `test_blank_lines_and_comments` and `test_bad_number_names_its_line` "
            "(the `ParseError` carries line 2 and the text). 9 tests, all pass."
        ),
    ),
    pause_before=360.0,
)

DOCS = Prompt(
    "Document the command line options in the README.",
    (
        Step("", (call("read", path="README.md"),)),
        Step(
            "",
            (
                call(
                    "edit",
                    path="README.md",
                    edits=[
                        {
                            "old": "    python -m calc data.csv --column price\n",
                            "new": "    python -m calc data.csv --column price\n    python -m calc numbers.txt --precision 4\n\n"
                            "Options: `--column NAME` reads that column of a CSV file (with a header row); "
                            "`--precision N` prints N decimals (default 2).\n",
                        }
                    ],
                ),
            ),
        ),
        Step("", (call("grep", pattern="precision", path="README.md"),)),
        Step("", (call("bash", command="python3 -m calc --help"),)),
        Step("The README now shows `--precision` in an example and describes both options (README.md:7-10)."),
    ),
)

CHECK = Prompt(
    "Run every test and the command line once more, then list what changed in this session.",
    (
        Step("", (call("bash", command=TESTS),)),
        Step("", (call("bash", command="python3 -m calc data/sample.csv --column price"),)),
        Step("", (call("ls", path="tests"),)),
        Step("", (call("ls", path="data"),)),
        Step("", (call("read", path="tests/test_parse.py"),)),
        Step(
            "9 tests pass and the command line prints the report. Changed: calc/stats.py:23 (median fix), "
            "calc/report.py and calc/cli.py (`--precision`), README.md (options); added "
            "tests/test_median_edge.py, tests/test_parse.py and data/sample.csv."
        ),
    ),
)

SAME_BUG = Prompt(
    "Check the other modules for the same off-by-one mistake as median.",
    (
        Step("", (call("grep", pattern=r"// 2|\+ 1\]", path="calc"),)),
        Step("", (call("grep", pattern=r"\[[a-z_]+ [-+] 1\]", path="."),)),
        Step("", (call("read", path="calc/report.py"),)),
        Step("", (call("read", path="calc/parse.py", offset=18, limit=16),)),
        Step(
            "",
            (
                call(
                    "bash",
                    command='python3 -c "from calc import stats; print(stats.median([1, 2]), stats.spread([3, 1]))"',
                ),
            ),
        ),
        Step(
            "No other index arithmetic: only median used `middle + 1` (now fixed). parse.py counts lines from 1 "
            "with `enumerate(start=1)`, report.py indexes nothing; median([1, 2]) gives 1.5 and spread works."
        ),
    ),
)

VARIANCE = Prompt(
    "Make variance raise a clear error for a single value, and add a test for it.",
    (
        Step("", (call("read", path="calc/stats.py", offset=26, limit=10),)),
        Step(
            "",
            (
                call(
                    "edit",
                    path="calc/stats.py",
                    edits=[
                        {
                            "old": '    """Sample variance (n - 1 in the denominator)."""\n',
                            "new": '    """Sample variance (n - 1 in the denominator)."""\n'
                            "    if len(values) < 2:\n"
                            '        raise ValueError("variance needs at least two values")\n',
                        }
                    ],
                ),
            ),
        ),
        Step("", (call("read", path="tests/test_median_edge.py"),)),
        Step(
            "",
            (
                call(
                    "edit",
                    path="tests/test_median_edge.py",
                    edits=[
                        {
                            "old": '\n\nif __name__ == "__main__":',
                            "new": "\n\n    def test_variance_of_one_value(self):\n"
                            "        with self.assertRaises(ValueError):\n"
                            "            stats.variance([3])\n"
                            '\n\nif __name__ == "__main__":',
                        }
                    ],
                ),
            ),
        ),
        Step("", (call("bash", command=TESTS),)),
        Step(
            '`variance` now raises `ValueError("variance needs at least two values")` for fewer than two '
            "values (calc/stats.py:29) instead of dividing by zero; `test_variance_of_one_value` checks it. 10 tests pass."
        ),
    ),
)

LONG = [FIND, FIX_IT, ADD_TEST, FLOW, PRECISION, PARSER_TESTS, DOCS, CHECK, SAME_BUG, VARIANCE]
"""The short session and seven more prompts (64 requests), a 6-minute pause before the sixth
prompt; the bench sets a context window small enough for one compaction."""
