"""Documentation that must not go stale: every hook documented, the README's promises intact."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from crab._host import hookspecs

ROOT = Path(__file__).resolve().parents[2]
HOOKS = [name for name, value in vars(hookspecs).items() if name.startswith("crab_") and inspect.isfunction(value)]


def test_every_hookspec_has_a_docstring():
    assert len(HOOKS) == 20  # update docs/hooks.md when this changes
    for name in HOOKS:
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert len(doc) > 40, name


def test_every_hook_is_documented_with_its_signature():
    text = (ROOT / "docs" / "hooks.md").read_text()
    for name in HOOKS:
        params = ", ".join(inspect.signature(getattr(hookspecs, name)).parameters)
        assert f"### `{name}({params})" in text, name


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    marker = readme.index("<!-- test-command")
    command = readme[marker:].splitlines()[2]
    # The whole suite: its options only spread it over workers (pytest-xdist), none narrows it.
    before, found, options = command.partition(".venv/bin/pytest")
    assert found and before.endswith("&& "), command
    words = options.split()
    assert set(words[::2]) <= {"-n", "--dist"} and len(words) % 2 == 0, command
    assert "test-command" in (ROOT / ".ci" / "run").read_text()


def test_every_plugin_is_installed_for_development_and_listed():
    requirements = (ROOT / "requirements-dev.txt").read_text()
    readme = (ROOT / "README.md").read_text()
    for pyproject in sorted((ROOT / "plugins").glob("*/pyproject.toml")):
        folder = pyproject.parent.name
        assert f"-e ./plugins/{folder}" in requirements, folder
        distribution = re.search(r'^name = "([^"]+)"', pyproject.read_text(), re.M)
        assert distribution and distribution.group(1) in readme, folder
