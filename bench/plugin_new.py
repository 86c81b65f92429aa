"""From an empty folder to a rendered, installed and tested tool plugin: how many commands, how long.

Setup (not counted, timed apart): a fresh venv with crab-core installed from a wheel built from
this checkout, plus pytest; that is a user who has crab. Then, in an empty folder, exactly what
``crab plugin new`` tells the user to do next, each command timed:

    crab plugin new word-count
    crab plugins install -e <folder>          # pip in crab's environment, enabled in the config
    <crab's python> -m pytest -q <folder>     # the plugin's own tests

The install builds the plugin with build isolation, as a user's pip does, so pip fetches hatchling
(and editables) from the package index or its cache. Target: 3 commands, under a minute.

    python bench/plugin_new.py
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"failed ({result.returncode}): {shlex.join(cmd)}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return elapsed, result


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="crab-plugin-new-") as tmp:
        base = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "VIRTUAL_ENV", "PYTHON"))}
        env["CRAB_HOME"] = str(base / "home")
        start = time.perf_counter()
        wheels = base / "wheels"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "-w",
                wheels,
                ROOT / "core",
            ],
            check=True,
        )
        venv.EnvBuilder(with_pip=True).create(base / "venv")
        bin_dir = base / "venv" / "bin"
        subprocess.run(
            [bin_dir / "pip", "install", "-q", *wheels.glob("crab_core-*.whl"), "pytest"], check=True, env=env
        )
        setup = time.perf_counter() - start
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"

        work = base / "empty"
        work.mkdir()
        steps: list[tuple[str, float]] = []
        took, result = run(["crab", "plugin", "new", "word-count"], work, env)
        steps.append(("crab plugin new word-count", took))
        next_line = result.stdout.splitlines()[-1].removeprefix("next: ")
        for command in next_line.split(" && "):  # what crab told the user to run next
            took, result = run(shlex.split(command), work, env)
            steps.append((command.replace(str(base), "$TMP"), took))
        if " passed" not in result.stdout:
            sys.exit(f"the plugin's tests did not pass:\n{result.stdout}")
        listed = subprocess.run(["crab", "plugins", "list"], cwd=work, env=env, capture_output=True, text=True)
        assert any(line.split()[:2] == ["word-count", "loaded"] for line in listed.stdout.splitlines()), listed.stdout

    total = sum(t for _, t in steps)
    print(f"setup (venv + crab-core wheel + pytest, not counted): {setup:.1f} s")
    for command, took in steps:
        print(f"  {took:6.2f} s  {command}")
    print(f"commands: {len(steps)} (target 3)   wall time: {total:.1f} s (target < 60 s)")
    print(f"tests: {result.stdout.strip().splitlines()[-1]}")


if __name__ == "__main__":
    main()
