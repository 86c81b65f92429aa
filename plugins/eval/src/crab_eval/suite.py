"""A suite of tasks read from a folder: each task a small TOML file (format in the README).

A suite folder holds ``NAME.toml`` files or ``NAME/task.toml`` folders (the fixture and scripted
solution beside it). ``starter`` names the suite shipped in this package. A malformed task is one
``crab.UsageError`` line naming the file and the key.
"""

from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crab

STARTER = Path(__file__).parent / "starter"
TASK_KEYS = {"name", "description", "prompt", "prompts", "fixture", "limits", "check", "scripted"}
LIMIT_KEYS = {"max_iterations", "timeout"}
CHECK_KEYS = {"command", "timeout", "files", "absent", "answer", "unchanged", "judge"}
SCRIPTED_KEYS = {"solution"}


@dataclass(frozen=True)
class Check:
    """How a run is judged; every criterion given must hold."""

    command: tuple[str, ...] = ()
    timeout: float = 120.0
    files: dict[str, str] = field(default_factory=dict)
    absent: tuple[str, ...] = ()
    answer: tuple[str, ...] = ()
    unchanged: bool = False
    judge: str | None = None

    @property
    def mechanical(self) -> bool:
        """Whether anything but a judge model decides."""
        return bool(self.command or self.files or self.absent or self.answer or self.unchanged)


@dataclass(frozen=True)
class Task:
    name: str
    source: Path
    prompts: tuple[str, ...]
    description: str = ""
    fixture: Path | None = None
    max_iterations: int | None = None
    timeout: float | None = None
    check: Check = field(default_factory=Check)
    solutions: tuple[Path, ...] = ()


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, what: str) -> crab.UsageError:
        return crab.UsageError(f"task {self.path}: {what}")

    def keys(self, table: dict[str, Any], allowed: set[str], where: str) -> None:
        unknown = sorted(set(table) - allowed)
        if unknown:
            raise self.fail(f"unknown key {where}{unknown[0]!r} (known: {', '.join(sorted(allowed))})")

    def table(self, data: dict[str, Any], key: str) -> dict[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(f"[{key}] must be a table")
        return value

    def strings(self, value: Any, key: str) -> tuple[str, ...]:
        if isinstance(value, str):
            return (value,)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f"{key} must be a string or a list of strings")
        return tuple(value)

    def number(self, value: Any, key: str, kind: type) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise self.fail(f"{key} must be a number above 0")
        if kind is int and not isinstance(value, int):
            raise self.fail(f"{key} must be a whole number")
        return kind(value)

    def file(self, value: Any, key: str) -> Path:
        if not isinstance(value, str) or not value:
            raise self.fail(f"{key} must be a path relative to the task file")
        resolved = (self.path.parent / value).resolve()
        if not resolved.exists():
            raise self.fail(f"{key} {value!r} does not exist beside the task file")
        return resolved


def read_task(path: Path) -> Task:
    reader = _Reader(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise reader.fail(f"cannot be read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise reader.fail(f"is not valid TOML ({exc})") from None
    reader.keys(data, TASK_KEYS, "")
    default_name = path.parent.name if path.name == "task.toml" else path.stem
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise reader.fail("name must be one word")
    if ("prompt" in data) == ("prompts" in data):
        raise reader.fail("give exactly one of prompt (a string) or prompts (a list)")
    prompts = reader.strings(data.get("prompt", data.get("prompts")), "prompts")
    if not prompts or not all(p.strip() for p in prompts):
        raise reader.fail("prompts must not be empty")
    limits = reader.table(data, "limits")
    reader.keys(limits, LIMIT_KEYS, "[limits] ")
    check_table = reader.table(data, "check")
    reader.keys(check_table, CHECK_KEYS, "[check] ")
    scripted = reader.table(data, "scripted")
    reader.keys(scripted, SCRIPTED_KEYS, "[scripted] ")
    command = check_table.get("command", ())
    if isinstance(command, str):
        command = tuple(shlex.split(command))
    else:
        command = reader.strings(list(command), "[check] command")
    files = check_table.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise reader.fail('[check] files must map paths to the text each must contain ("" for any)')
    unchanged = check_table.get("unchanged", False)
    if not isinstance(unchanged, bool):
        raise reader.fail("[check] unchanged must be true or false")
    judge = check_table.get("judge")
    if judge is not None and (not isinstance(judge, str) or not judge.strip()):
        raise reader.fail("[check] judge must be the rubric, as text")
    check = Check(
        command=command,
        timeout=reader.number(check_table.get("timeout", 120.0), "[check] timeout", float),
        files=dict(files),
        absent=reader.strings(check_table.get("absent", []), "[check] absent"),
        answer=reader.strings(check_table.get("answer", []), "[check] answer"),
        unchanged=unchanged,
        judge=judge,
    )
    if not check.mechanical and check.judge is None:
        raise reader.fail("[check] says nothing: give a command, files, absent, answer, unchanged or judge")
    solutions = tuple(
        reader.file(s, "[scripted] solution")
        for s in reader.strings(scripted.get("solution", []), "[scripted] solution")
    )
    if solutions and len(solutions) != len(prompts):
        raise reader.fail(f"[scripted] solution: give one script per prompt ({len(prompts)})")
    fixture = reader.file(data["fixture"], "fixture") if "fixture" in data else None
    if fixture is not None and not fixture.is_dir():
        raise reader.fail("fixture must be a folder")
    return Task(
        name=name,
        source=path,
        prompts=prompts,
        description=str(data.get("description", "")),
        fixture=fixture,
        max_iterations=reader.number(limits["max_iterations"], "[limits] max_iterations", int)
        if "max_iterations" in limits
        else None,
        timeout=reader.number(limits["timeout"], "[limits] timeout", float) if "timeout" in limits else None,
        check=check,
        solutions=solutions,
    )


def suite_folder(suite: str) -> Path:
    if suite == "starter":
        return STARTER
    folder = Path(suite).expanduser()
    if not folder.is_dir():
        raise crab.UsageError(f"no suite folder {suite}: name a folder of task files, or `starter`")
    return folder.resolve()


def read_suite(suite: str, only: list[str] | None = None) -> list[Task]:
    """The suite's tasks by name (``only``: just these); a suite with none is a usage error."""
    folder = suite_folder(suite)
    files = sorted(p for p in folder.glob("*.toml")) + sorted(folder.glob("*/task.toml"))
    tasks = [read_task(path) for path in files]
    seen: set[str] = set()
    for task in tasks:
        if task.name in seen:
            raise crab.UsageError(f"suite {folder}: two tasks are named {task.name!r}; rename one")
        seen.add(task.name)
    if only:
        missing = sorted(set(only) - seen)
        if missing:
            raise crab.UsageError(f"suite {folder} has no task {missing[0]!r} (it has: {', '.join(sorted(seen))})")
        tasks = [t for t in tasks if t.name in only]
    if not tasks:
        raise crab.UsageError(f"suite {folder} has no tasks: add NAME.toml or NAME/task.toml files")
    return tasks
