"""``crab replay SESSION``: run the replay and print it call by call, then a summary.

Exit 0 when every compared call gave the recorded result, 1 when any differs; ``--json`` also
writes both results of every call; ``--as-script`` writes the session as a scripted-provider
script instead of replaying it.

A session file's permission answers were written by whoever wrote the file, not given by the
user: each call such a recording allowed is asked again on the terminal (refused without one)
unless ``--trust-recording`` says the file is the user's own.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import crab

from crab_eval.diff import compact_diff
from crab_eval.replay import CallOutcome, ReplayReport, replay
from crab_eval.report_text import visible
from crab_eval.script import session_script
from crab_eval.tape import read_session


def _args(call: crab.messages.ToolCall, limit: int = 70) -> str:
    text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def outcome_lines(outcome: CallOutcome) -> list[str]:
    head = f"{outcome.number:>4}  {outcome.call.name}({_args(outcome.call)})"
    if outcome.same:
        return [f"{head}  same"]
    if outcome.live is None:
        return [f"{head}  differs: not run in the replay"]
    if outcome.recorded is None:
        return [f"{head}  differs: no recorded result"]
    lines = [f"{head}  differs"]
    if outcome.recorded.is_error != outcome.live.is_error:
        was, now = ("error", "ok") if outcome.recorded.is_error else ("ok", "error")
        lines.append(f"        result was {was}, now {now}")
    lines += [f"        {line}" for line in compact_diff(outcome.recorded.content, outcome.live.content)]
    return lines


def report_lines(report: ReplayReport, tool: str | None, in_place: bool, keep: bool = False) -> list[str]:
    shown = [o for o in report.outcomes if tool is None or o.call.name == tool]
    where = "in place" if in_place else f"in a scratch copy{f' kept at {report.workspace}' if keep else ''}"
    lines = [f"replay of {report.session} ({len(report.outcomes)} tool calls) {where}"]
    for outcome in shown:
        lines += outcome_lines(outcome)
    lines += [f"warning: {error}" for error in report.errors]
    differ = [o for o in shown if not o.same]
    focus = f" of {tool}" if tool else ""
    verdict = "none differs" if not differ else f"{len(differ)} differ{'s' if len(differ) == 1 else ''}"
    lines.append(f"{len(shown)} calls{focus}: {len(shown) - len(differ)} same, {verdict}")
    return lines


def report_json(report: ReplayReport, tool: str | None) -> dict[str, Any]:
    """The replay as data: every reported call with both results, and the summary."""
    shown = [o for o in report.outcomes if tool is None or o.call.name == tool]
    calls = []
    for outcome in shown:
        recorded, live = outcome.recorded, outcome.live
        calls.append(
            {
                "number": outcome.number,
                "id": outcome.call.id,
                "tool": outcome.call.name,
                "arguments": outcome.call.arguments,
                "same": outcome.same,
                "recorded": None if recorded is None else {"content": recorded.content, "is_error": recorded.is_error},
                "live": None if live is None else {"content": live.content, "is_error": live.is_error},
            }
        )
    differ = sum(not c["same"] for c in calls)
    return {"v": 1, "session": report.session, "calls": calls, "same": len(calls) - differ, "differ": differ}


def ask_terminal(request: crab.PermissionRequest) -> bool:
    """The user's own word on one call a session file allowed: y on the terminal, or no."""
    if not sys.stdin.isatty():
        sys.stderr.write(
            visible(f"replay: refused {request.tool} ({request.permission}): {request.summary}")
            + " (a session file's answers are not yours: answer on a terminal, or pass --trust-recording)\n"
        )
        return False
    sys.stderr.write(
        visible(f"replay: the session file ran {request.tool} ({request.permission}): {request.summary}")
        + "\nrun it here too? [y/N] "
    )
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def run(
    config: crab.Config,
    session_ref: str,
    *,
    until: int | None,
    tool: str | None,
    in_place: bool,
    keep: bool = False,
    workspace: str | None,
    as_script: str | None,
    json_path: str | None = None,
    store: str | None,
    plugins: str | None,
    trust_recording: bool = False,
) -> int:
    if until is not None and until < 1:
        raise crab.UsageError(f"--until {until}: give a call number from 1 on")
    session = read_session(session_ref, store=store, plugins=plugins)
    if as_script is not None:
        script = crab.secrets.Redactor(crab.secrets.known_secrets(config)).payload(session_script(session))
        text = json.dumps(script, ensure_ascii=False, indent=1) + "\n"
        if as_script == "-":
            sys.stdout.write(text)
        else:
            crab.tools.write_atomic(Path(as_script), text.encode("utf-8"))
            sys.stderr.write(f"wrote {as_script}\n")
        return 0
    names = None if plugins is None else [p for p in plugins.split(",") if p]
    report = replay(
        session,
        workspace=Path(workspace) if workspace else None,
        in_place=in_place,
        until=until,
        plugins=names,
        confirm=ask_terminal if session.from_file and not trust_recording else None,
    )
    redactor = crab.secrets.Redactor(crab.secrets.known_secrets(config))  # results and the recording are masked already
    for line in report_lines(report, tool, in_place, keep):
        sys.stdout.write(redactor.text(line) + "\n")
    if json_path:
        document = redactor.payload(report_json(report, tool))
        crab.tools.write_atomic(
            Path(json_path), (json.dumps(document, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
        )
    if not in_place and not keep:
        shutil.rmtree(report.workspace.parent, ignore_errors=True)
    shown = [o for o in report.outcomes if tool is None or o.call.name == tool]
    return 1 if any(not o.same for o in shown) else 0
