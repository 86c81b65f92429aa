"""The eval report as one self-contained HTML page: two inline SVG charts and the table, no script, no CDN.

The charts show, per configuration over the whole suite, the pass rate with its 95% interval
and the mean cost of a run (or the tokens, where no price is known).
"""

from __future__ import annotations

from html import escape
from typing import Any

from crab_eval.report_text import HEADERS, rows

WIDTH, BAR, GAP, LEFT, TOP = 560, 26, 14, 190, 30
COLOURS = ("#3b6ea8", "#d9822b", "#5a9e4b", "#a34d8f", "#7a7a7a")


def _frame(chart_id: str, title: str, count: int) -> tuple[list[str], int]:
    height = TOP + count * (BAR + GAP) + 24
    head = [
        f'<svg id="{chart_id}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="0" y="18" font-size="15" font-weight="bold">{escape(title)}</text>',
    ]
    return head, height


def _label(y: int, text: str) -> str:
    short = text if len(text) <= 28 else text[:27] + "…"
    return f'<text x="{LEFT - 8}" y="{y + BAR * 0.68:.0f}" font-size="12" text-anchor="end">{escape(short)}</text>'


def pass_rate_chart(totals: list[dict[str, Any]]) -> str:
    parts, height = _frame("pass-rate-chart", "Pass rate per configuration (95% interval)", len(totals))
    span = WIDTH - LEFT - 110
    for i, total in enumerate(totals):
        y = TOP + i * (BAR + GAP)
        rate = total["pass_rate"] or 0.0
        low, high = total["interval"]
        colour = COLOURS[i % len(COLOURS)]
        parts.append(_label(y, str(total["config"])))
        parts.append(
            f'<rect class="bar" x="{LEFT}" y="{y}" width="{max(rate * span, 1):.1f}" height="{BAR}" fill="{colour}"/>'
        )
        mid = y + BAR / 2
        parts.append(
            f'<line x1="{LEFT + low * span:.1f}" x2="{LEFT + high * span:.1f}" y1="{mid}" y2="{mid}" '
            'stroke="#222" stroke-width="2"/>'
        )
        label = f"{rate * 100:.0f}% ({total['passes']}/{total['runs']})"
        parts.append(f'<text x="{LEFT + span + 6}" y="{mid + 4:.0f}" font-size="12">{label}</text>')
    parts.append(f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP - 4}" y2="{height - 20}" stroke="#888"/>')
    parts.append("</svg>")
    return "\n".join(parts)


def cost_chart(totals: list[dict[str, Any]]) -> str:
    priced = all(t["cost"] is not None for t in totals)
    metric, unit = ("cost", "$") if priced else ("output_tokens", "tokens out")
    title = "Mean cost of a run per configuration" if priced else "Mean output tokens of a run (no prices known)"
    parts, _ = _frame("cost-chart", title, len(totals))
    values = [float(t[metric] or 0.0) for t in totals]
    top = max(values) or 1.0
    span = WIDTH - LEFT - 110
    for i, (total, value) in enumerate(zip(totals, values, strict=True)):
        y = TOP + i * (BAR + GAP)
        parts.append(_label(y, str(total["config"])))
        width = max(value / top * span, 1)
        colour = COLOURS[i % len(COLOURS)]
        parts.append(f'<rect class="bar" x="{LEFT}" y="{y}" width="{width:.1f}" height="{BAR}" fill="{colour}"/>')
        shown = f"${value:.4f}" if priced else f"{value:.0f} {unit}"
        parts.append(f'<text x="{LEFT + width + 6:.1f}" y="{y + BAR * 0.68:.0f}" font-size="12">{shown}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def html_report(report: dict[str, Any]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADERS)
    body = "\n".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows(report))
    note = ""
    if report["finished_runs"] < report["planned_runs"]:
        note = f"<p>{report['finished_runs']} of {report['planned_runs']} runs finished.</p>"
    if len(report["configurations"]) > 1:
        note += f"<p>* differs from {escape(report['configurations'][0])} by more than the noise (95%).</p>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>crab eval {escape(report["suite"])}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}
td:first-child, td:nth-child(2), th {{ text-align: left; }}
.charts {{ display: flex; flex-wrap: wrap; gap: 32px; margin-bottom: 24px; }}
</style></head>
<body>
<h1>crab eval {escape(report["suite"])}</h1>
<div class="charts">
{pass_rate_chart(report["totals"])}
{cost_chart(report["totals"])}
</div>
<table><thead><tr>{head}</tr></thead><tbody>
{body}
</tbody></table>
{note}
</body></html>
"""
