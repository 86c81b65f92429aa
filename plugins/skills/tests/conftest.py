"""Helpers for crab-skills' tests: writing skill folders, and a site folder for the real ``crab``
command holding crab.testing's scripted provider (``ScriptedSite``) and a plugin shipping skills."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab.testing import ScriptedSite


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


SHIPPER = '''
"""A plugin shipping skills through crab_skill_dirs (the folder $SKILLS_TEST_SHIPPED)."""

import os
from pathlib import Path

import crab


@crab.hookimpl
def crab_skill_dirs(config):
    return [Path(os.environ["SKILLS_TEST_SHIPPED"])]
'''


MODELS = ("scripted", "big")
"""The test provider's models: the run's, and one a command's ``model:`` can choose."""


@pytest.fixture
def skills_site(tmp_path: Path) -> ScriptedSite:
    """crab.testing's scripted provider (``scripted``, models ``MODELS``) and a plugin shipping skills."""
    site = ScriptedSite(tmp_path, provider="scripted", models=MODELS)
    site.add_plugin("shipper", "skills_test_shipper", SHIPPER)
    return site


Crab = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def crab_cmd(tmp_path: Path, skills_site: ScriptedSite) -> Crab:
    """``crab_cmd(*args, cwd=…, script=[…])`` runs the real ``crab`` with core, crab-skills and the
    two test plugins; ``tmp_path/home`` is ``CRAB_HOME``."""

    def run(*args: str, cwd: Path, script: list[object] | None = None, plugins: str = "skills,scripted,shipper"):
        skills_site.script(script or [[{"text": "ok"}]])
        env = skills_site.env(plugins, extra={"SKILLS_TEST_SHIPPED": str(tmp_path / "shipped")})
        return subprocess.run(
            [sys.executable, "-m", "crab", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
        )

    return run


@pytest.fixture
def requests_sent(skills_site: ScriptedSite) -> Callable[[], list[dict[str, Any]]]:
    """What the scripted provider of ``crab_cmd`` was sent so far (model, system prompt, messages)."""
    return skills_site.requests
