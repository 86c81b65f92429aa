"""Judging one finished run by its task's ``[check]``: every criterion given must hold.

A check command runs in the run's workspace (``{python}`` is this Python, ``{task}`` the task
file's folder); expected files must hold their text, absent ones must be gone, the answer must
contain each expected text (case ignored), ``unchanged`` compares the workspace with the fixture,
and a rubric goes to the judge model (``crab run --read-only`` in the workspace, answering PASS or
FAIL first).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from crab_eval.processes import run_bounded
from crab_eval.suite import Check, Task

IGNORED = ("__pycache__", ".pytest_cache")
JUDGE_PROMPT = """You are judging whether an agent did a task. Read the workspace if you need to; change nothing.

Task given to the agent:
{task}

The agent's final answer:
{answer}

Rubric:
{rubric}

Reply with PASS or FAIL as the first word, then one sentence saying why."""


def snapshot(folder: Path | None) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path (caches left out)."""
    if folder is None or not folder.is_dir():
        return {}
    files: dict[str, bytes] = {}
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in IGNORED]
        for name in names:
            path = Path(root, name)
            if path.suffix != ".pyc" and path.is_file():
                files[path.relative_to(folder).as_posix()] = path.read_bytes()
    return files


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


async def judge(
    task: Task, workspace: Path, answer: str, judge_model: str | None, env: dict[str, str] | None = None
) -> list[str]:
    """Why the run fails, one reason per unmet criterion; empty when it passes."""
    check: Check = task.check
    reasons: list[str] = []
    if check.command:
        argv = [
            part.replace("{python}", sys.executable).replace("{task}", str(task.source.parent))
            for part in check.command
        ]
        try:
            done = await run_bounded(argv, workspace, check.timeout, env)
        except OSError as exc:
            reasons.append(f"check command could not start: {exc}")
        else:
            if done.timed_out:
                reasons.append(f"check command ran over {check.timeout:g}s")
            elif done.code != 0:
                reasons.append(f"check command exited {done.code}: {_last_line(done.stdout + done.stderr)}")
    for name, text in check.files.items():
        path = workspace / name
        if not path.is_file():
            reasons.append(f"expected file {name} is missing")
        elif text and text not in path.read_text(encoding="utf-8", errors="replace"):
            reasons.append(f"{name} does not contain {text!r}")
    reasons += [f"{name} should be gone" for name in check.absent if (workspace / name).exists()]
    lowered = answer.lower()
    reasons += [f"the answer does not mention {text!r}" for text in check.answer if text.lower() not in lowered]
    if check.unchanged:
        before, after = snapshot(task.fixture), snapshot(workspace)
        changed = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
        if changed:
            reasons.append(f"the workspace changed: {', '.join(changed[:5])}")
    if check.judge is not None and judge_model:
        reasons += await _judged(task, workspace, answer, judge_model, env)
    return reasons


async def _judged(task: Task, workspace: Path, answer: str, model: str, env: dict[str, str] | None) -> list[str]:
    prompt = JUDGE_PROMPT.format(task="\n\n".join(task.prompts), answer=answer or "(none)", rubric=task.check.judge)
    argv = [sys.executable, "-m", "crab", "run", "--read-only", "--store", "memory", "-o", "json", "-m", model, prompt]
    done = await run_bounded(argv, workspace, 300.0, env)
    if done.timed_out or done.code != 0:
        return [f"the judge model failed: {_last_line(done.stderr) if not done.timed_out else 'timed out'}"]
    try:
        verdict = str(json.loads(done.stdout).get("text", "")).strip()
    except (json.JSONDecodeError, AttributeError):
        return ["the judge model gave no verdict"]
    word = verdict.split(maxsplit=1)[0].strip("*:.,").upper() if verdict else ""
    if word == "PASS":
        return []
    return [f"the judge: {verdict[:200]}" if word == "FAIL" else f"the judge gave no PASS/FAIL: {verdict[:120]}"]
