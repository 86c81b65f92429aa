"""Where definition files are looked for, and when a project's folder is trusted (crab_frontmatter_kit)."""

from __future__ import annotations

from pathlib import Path

import pytest
from crab.testing import load_config, trust_project
from crab_frontmatter_kit import project_folder, project_trusted, user_folder


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("CRAB_HOME", str(home))
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".crab" / "agents").mkdir(parents=True)
    (root / "src" / "deep").mkdir(parents=True)
    return root


def test_the_nearest_project_folder_up_to_the_repository_root(repo: Path):
    assert project_folder(repo / "src" / "deep", "agents") == repo / ".crab" / "agents"
    assert project_folder(repo / "src", "commands") is None  # no such kind here, and .git stops the walk


def test_crab_home_is_never_a_project(repo: Path, tmp_path: Path):
    (tmp_path / "home" / "agents").mkdir()
    assert user_folder("agents") == tmp_path / "home" / "agents"
    assert project_folder(tmp_path / "home", "agents") is None


def test_a_project_folder_is_trusted_only_with_its_trusted_config(repo: Path):
    (repo / ".crab" / "config.toml").write_text("[crab]\n")
    folder = repo / ".crab" / "agents"
    assert not project_trusted(folder, load_config(repo))
    trust_project(repo / ".crab" / "config.toml")
    assert project_trusted(folder, load_config(repo))
