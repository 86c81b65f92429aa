"""What mypy sees of a typed library run (docs/library.md#typed-results): ``result.output`` is the
``output_type`` (``str`` for an untyped agent, the run's own type when it gives one), and a tool's
``crab.RunContext[Deps]`` types ``ctx.deps``. Runs mypy (strict) on a program in tmp_path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = '''
from dataclasses import dataclass
import crab


@dataclass
class City:
    name: str


@dataclass
class Deps:
    db: str


def lookup(ctx: crab.RunContext[Deps], q: str) -> str:
    """Look up."""
    reveal_type(ctx.deps)
    return ctx.deps.db + q


plain = crab.Agent("mock/tour")
reveal_type(plain.run_sync("x").output)
typed = crab.Agent("mock/tour", output_type=City, tools=[lookup])
reveal_type(typed.run_sync("x", deps=Deps("d")).output)
reveal_type(typed.run_sync("x", output_type=list[City]).output)
reveal_type(typed.run_stream_sync("x").result_sync().output)


async def main() -> None:
    async with crab.Agent(output_type=City) as agent:
        reveal_type((await agent.run("x")).output)


wrong: int = typed.run_sync("x").output
'''


def test_mypy_sees_the_output_type_and_the_deps_type(tmp_path: Path):
    pytest.importorskip("mypy")  # a development requirement; core's own venv in CI has it
    (tmp_path / "program.py").write_text(PROGRAM)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "program.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    revealed = [line.split("Revealed type is ")[1] for line in done.stdout.splitlines() if "Revealed type is" in line]
    assert revealed == [
        '"program.Deps"',
        '"str"',
        '"program.City"',
        '"list[program.City]"',
        '"program.City"',
        '"program.City"',
    ], done.stdout
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and 'expression has type "City", variable has type "int"' in errors[0], done.stdout
