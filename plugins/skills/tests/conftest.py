"""Helpers for crab-skills' tests: writing skill folders, and a site folder for the real ``crab``
command holding a scripted provider (which records every request) and a plugin shipping skills."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def _write_skill(root: Path, folder: str, front: str, body: str = "") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front.strip()}\n---\n{body}", encoding="utf-8")
    return path


@pytest.fixture
def write_skill() -> Callable[..., Path]:
    """``write_skill(root, folder, front, body="")`` writes ``root/folder/SKILL.md`` (front matter
    ``front`` between --- lines, then ``body``) and returns its path."""
    return _write_skill


SCRIPTED = '''
"""A provider replaying the JSON script $SKILLS_TEST_SCRIPT; each request is appended to
$SKILLS_TEST_LOG as one JSON line (system prompt, messages)."""

import json
import os

import crab
from crab.testing import ScriptedProvider


class Scripted:
    name = "scripted"

    def __init__(self):
        self.engine = None

    def models(self):
        return [crab.ModelInfo(id="scripted", provider="scripted")]

    def check(self, model):
        return None

    def stream(self, request):
        with open(os.environ["SKILLS_TEST_LOG"], "a", encoding="utf-8") as log:
            messages = [crab.message_to_dict(m) for m in request.messages]
            log.write(json.dumps({"system": request.system, "messages": messages}) + "\\n")
        if self.engine is None:
            with open(os.environ["SKILLS_TEST_SCRIPT"], encoding="utf-8") as handle:
                self.engine = ScriptedProvider(json.load(handle))
        return self.engine.stream(request)


@crab.hookimpl
def crab_providers(config):
    return [Scripted()]
'''

SHIPPER = '''
"""A plugin shipping skills through crab_skill_dirs (the folder $SKILLS_TEST_SHIPPED)."""

import os
from pathlib import Path

import crab


@crab.hookimpl
def crab_skill_dirs(config):
    return [Path(os.environ["SKILLS_TEST_SHIPPED"])]
'''


def make_site(root: Path) -> Path:
    site = root / "site"
    for name, module, text in (
        ("scripted", "skills_test_scripted", SCRIPTED),
        ("shipper", "skills_test_shipper", SHIPPER),
    ):
        (site / f"{module}-0.0.1.dist-info").mkdir(parents=True, exist_ok=True)
        (site / f"{module}.py").write_text(text, encoding="utf-8")
        dist = site / f"{module}-0.0.1.dist-info"
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.0.1\n")
        (dist / "entry_points.txt").write_text(f"[crab]\n{name} = {module}\n")
    return site


Crab = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def crab_cmd(tmp_path: Path) -> Crab:
    """``crab_cmd(*args, cwd=…, script=[…])`` runs the real ``crab`` with core, crab-skills and the
    two test plugins; ``tmp_path/home`` is ``CRAB_HOME``, requests go to ``tmp_path/requests.jsonl``."""
    import json

    site = make_site(tmp_path)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)

    def run(*args: str, cwd: Path, script: list[object] | None = None, plugins: str = "skills,scripted,shipper"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
        script_file = tmp_path / "script.json"
        script_file.write_text(json.dumps(script or [[{"text": "ok"}]]), encoding="utf-8")
        env.update(
            PYTHONPATH=str(site),
            CRAB_HOME=str(home),
            CRAB_PLUGINS=plugins,
            SKILLS_TEST_SCRIPT=str(script_file),
            SKILLS_TEST_LOG=str(tmp_path / "requests.jsonl"),
            SKILLS_TEST_SHIPPED=str(tmp_path / "shipped"),
        )
        return subprocess.run(
            [sys.executable, "-m", "crab", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
        )

    return run


@pytest.fixture
def requests_sent(tmp_path: Path) -> Callable[[], list[dict[str, Any]]]:
    """What the scripted provider of ``crab_cmd`` was sent so far (system prompt, messages)."""
    import json

    def read() -> list[dict[str, Any]]:
        log = tmp_path / "requests.jsonl"
        return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []

    return read
