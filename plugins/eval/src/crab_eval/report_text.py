"""The eval report as a terminal table: rich when it is installed, aligned plain text otherwise.

A ``*`` after a figure marks a difference from the first configuration larger than the noise.
"""

from __future__ import annotations

from typing import Any, TextIO

from crab_eval.report import marks

HEADERS = (
    "task",
    "config",
    "pass",
    "95% CI",
    "tokens in",
    "tokens out",
    "cost $",
    "time s",
    "model",
    "tools",
    "errors",
)
FIELDS = ("input_tokens", "output_tokens", "cost", "wall_seconds", "model_calls", "tool_calls", "tool_errors")


def _number(value: float | None, metric: str) -> str:
    if value is None:
        return "-"
    if metric == "cost":
        return f"{value:.4f}"
    if metric == "wall_seconds":
        return f"{value:.1f}"
    return f"{value:.1f}" if value != int(value) else f"{int(value)}"


def row(cell: dict[str, Any], name: str) -> list[str]:
    marked = set(marks(cell))
    low, high = cell["interval"]
    star = "*" if "pass_rate" in marked else ""
    figures = [
        name,
        str(cell["config"]),
        f"{cell['passes']}/{cell['runs']}{star}",
        f"{low * 100:.0f}-{high * 100:.0f}%" if cell["runs"] else "-",
    ]
    figures += [_number(cell[m], m) + ("*" if m in marked else "") for m in FIELDS]
    return figures


def rows(report: dict[str, Any]) -> list[list[str]]:
    body = [row(cell, cell["task"]) for cell in report["cells"]]
    body += [row(total, "all tasks") for total in report["totals"]]
    return body


def plain_table(report: dict[str, Any]) -> str:
    table = [list(HEADERS), *rows(report)]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADERS))]
    lines = []
    for r in table:
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])] + [
            c.rjust(w) for c, w in zip(r[2:], widths[2:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def comparison_lines(report: dict[str, Any]) -> list[str]:
    """Each later configuration beside the first: pass rates and the difference with its 95% interval."""
    configs = report["configurations"]
    if len(configs) < 2:
        return []
    cells = {(c["task"], c["config"]): c for c in report["cells"]}
    cells.update({("all tasks", t["config"]): t for t in report["totals"]})
    width = max(len(name) for name in [*report["tasks"], "all tasks"])
    lines = []
    for config in configs[1:]:
        lines.append(f"{config} beside {configs[0]}:")
        for task in [*report["tasks"], "all tasks"]:
            base, other = cells[task, configs[0]], cells[task, config]
            versus = other["versus"]
            low, high = versus["difference_interval"]
            star = " *" if versus["marked"]["pass_rate"] else ""
            lines.append(
                f"  {task.ljust(width)}  {base['passes']}/{base['runs']} -> {other['passes']}/{other['runs']}"
                f"  {versus['pass_rate_difference'] * 100:+.0f}% [{low * 100:+.0f}%, {high * 100:+.0f}%]{star}"
            )
    return lines


def footer(report: dict[str, Any]) -> list[str]:
    lines = comparison_lines(report)
    if report["finished_runs"] < report["planned_runs"]:
        lines.append(f"{report['finished_runs']} of {report['planned_runs']} runs finished; `--resume` runs the rest")
    if len(report["configurations"]) > 1:
        lines.append(f"* differs from {report['configurations'][0]} by more than the noise (95%)")
    for cell in report["cells"]:
        for failure in cell["failures"][:3]:
            lines.append(f"fail {cell['task']} [{cell['config']}] {failure}")
    return lines


def write_table(report: dict[str, Any], out: TextIO) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        out.write(plain_table(report) + "\n")
    else:
        table = Table(*HEADERS, title=f"crab eval {report['suite']}")
        for r in rows(report):
            table.add_row(*r)
        Console(file=out, width=max(120, 0), soft_wrap=False).print(table)
    for line in footer(report):
        out.write(line + "\n")
