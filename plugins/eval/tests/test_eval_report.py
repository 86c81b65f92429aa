"""The report: two configurations side by side, differences beyond the noise marked, plain and HTML."""

from __future__ import annotations

from crab_eval.report import build_report
from crab_eval.report_html import html_report
from crab_eval.report_text import footer, plain_table
from crab_eval.runner import EventTally, RunRecord


def record(task: str, config: str, n: int, passed: bool, cost: float) -> RunRecord:
    return RunRecord(
        f"{task}\t{config}\t{n}",
        task,
        config,
        "f",
        n,
        passed=passed,
        reasons=[] if passed else ["check failed"],
        input_tokens=100,
        output_tokens=10,
        cost=cost,
        wall_seconds=1.0,
        model_calls=2,
        tool_calls=1,
    )


def test_two_configurations_side_by_side_mark_what_exceeds_the_noise():
    runs = [record("t", "a", n, True, 0.01 + n * 0.001) for n in range(12)]
    runs += [record("t", "b", n, n < 2, 0.05 + n * 0.001) for n in range(12)]
    report = build_report("s", ["t"], ["a", "b"], runs, planned=24)
    table = plain_table(report)
    [row_b] = [line for line in table.splitlines() if line.startswith("t ") and " b " in line]
    assert "2/12*" in row_b and "0.0555*" in row_b, table
    [row_a] = [line for line in table.splitlines() if line.startswith("t ") and " a " in line]
    assert "*" not in row_a
    side = footer(report)
    assert side[0] == "b beside a:" and side[1].split()[:4] == ["t", "12/12", "->", "2/12"] and side[1].endswith("*")
    page = html_report(report)
    assert page.count('class="bar"') == 4 and "$0.0155" in page


def test_the_event_tally_counts_model_calls_tools_and_errors():
    tally = EventTally()
    for event in [
        {"type": "turn_start", "session_id": "s1"},
        {"type": "text_delta", "text": "a"},
        {"type": "tool_call", "call": {}},
        {"type": "tool_call", "call": {}},
        {"type": "usage", "usage": {}},
        {"type": "tool_result", "is_error": False},
        {"type": "tool_result", "is_error": True},
        {"type": "tool_call", "call": {}},
        {"type": "tool_result", "is_error": False},
        {"type": "text_delta", "text": "done"},
        {"type": "turn_end", "text": "done", "usage": {"input_tokens": 5, "output_tokens": 2, "cost": 0.5}},
    ]:
        tally.add(event)
    assert (tally.model_calls, tally.tool_calls, tally.tool_errors) == (3, 3, 1)
    assert (tally.session, tally.answer, tally.cost, tally.input_tokens) == ("s1", "done", 0.5, 5)


def test_what_a_run_printed_never_drives_the_terminal_or_breaks_the_table():
    """A check command runs code the model wrote: its last line may be escape sequences (OSC 52
    writes the clipboard, CSI 2J clears the screen), and a name may look like rich markup."""
    import io

    from crab_eval.report_text import write_table

    hostile = "check command exited 1: \x1b]52;c;ZXZpbA==\x07\x1b[2Jgone\x9b31m\nsecond line"
    runs = [RunRecord("t\tm,crab.x=[/]\t0", "t", "m,crab.x=[/]", "f", 0, passed=False, reasons=[hostile])]
    report = build_report("s[/b]", ["t"], ["m,crab.x=[/]"], runs, planned=1)
    out = io.StringIO()
    write_table(report, out)
    shown = out.getvalue()
    assert "m,crab.x=[/]" in shown and "crab eval s[/b]" in shown
    assert not any(c in shown for c in "\x1b\x07\x9b")
    [failure] = [line for line in shown.splitlines() if line.startswith("fail ")]
    assert failure.endswith("^[]52;c;ZXZpbA==^G^[[2Jgone\\x9b31m second line")
    assert "\x1b" not in plain_table(report)


def test_cache_reads_and_writes_are_tallied_and_reported():
    tally = EventTally()
    usage = {"input_tokens": 5, "output_tokens": 2, "cache_read_tokens": 900, "cache_write_tokens": 300, "cost": 0.1}
    for event in [{"type": "turn_start", "session_id": "s1"}, {"type": "turn_end", "text": "ok", "usage": usage}]:
        tally.add(event)
    assert (tally.cache_read_tokens, tally.cache_write_tokens) == (900, 300)
    run = record("t", "a", 0, True, 0.1)
    run.cache_read_tokens, run.cache_write_tokens = 900, 300
    report = build_report("s", ["t"], ["a"], [run], planned=1)
    # In the --json report (per cell and per configuration); the terminal table keeps its width.
    assert (report["cells"][0]["cache_read_tokens"], report["cells"][0]["cache_write_tokens"]) == (900, 300)
    assert (report["totals"][0]["cache_read_tokens"], report["totals"][0]["cache_write_tokens"]) == (900, 300)
