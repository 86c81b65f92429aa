"""Fixtures of crab-eval's tests: the real ``crab`` command with crab-eval, real tools and the mock provider.

``crab_env`` gives a ``CRAB_HOME``, a workspace apart from it, and ``run(*args)`` running
``python -m crab`` with exactly crab-eval, crab-provider-mock, crab-tools-basic, crab-tape-jsonl
(sessions kept, to replay) and ``probe``: a tiny tool plugin of the tests (``fake_site/``) whose
output the ``EVAL_PROBE_MODE`` variable flips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

FAKE_SITE = Path(__file__).parent / "fake_site"
PLUGINS = "eval,provider-mock,tools-basic,tape-jsonl,probe"
TIMEOUT = 300


@dataclass
class CrabEnv:
    root: Path
    home: Path
    work: Path
    env: dict[str, str]

    def run(
        self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "crab", *args],
            cwd=cwd or self.work,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

    def popen(self, *args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "crab", *args],
            cwd=cwd or self.work,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def script(self, name: str, replies: list[Any]) -> Path:
        path = self.root / name
        path.write_text(json.dumps({"replies": replies}))
        return path

    def record(self, replies: list[Any], prompt: str = "go") -> str:
        """Run a scripted session in the workspace (yolo) and return its id."""
        script = self.script("recorded.json", replies)
        done = self.run("run", "-m", f"mock/{script}", "--store", "jsonl", "--yolo", "-o", "json", prompt)
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["session_id"])


def make_env(root: Path) -> CrabEnv:
    """A CRAB_HOME, a workspace and the probe plugin's site folder under ``root``."""
    site = root / "site"
    site.mkdir(exist_ok=True)
    shutil.copy(FAKE_SITE / "crab_eval_probe.py", site / "crab_eval_probe.py")
    dist = site / "crab_eval_probe-0.0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crab_eval_probe\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[crab]\nprobe = crab_eval_probe\n")
    home, work = root / "crab-home", root / "workspace"  # apart from crab_home's own folders
    home.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "EVAL_"))}
    env.update(PYTHONPATH=str(site), CRAB_HOME=str(home), CRAB_PLUGINS=PLUGINS)
    return CrabEnv(root, home, work, env)


@pytest.fixture
def crab_env(tmp_path: Path) -> CrabEnv:
    return make_env(tmp_path)


@pytest.fixture(scope="session")
def make_crab_env() -> Callable[[Path], CrabEnv]:
    """``make_env`` for fixtures wider than one test."""
    return make_env
