"""``crab._config.environ``: the one place ``CRAB_*`` variables are read."""

from __future__ import annotations

import re
from pathlib import Path

from crab._config import environ

ROOT = Path(__file__).resolve().parents[2]


def test_reads_each_variable_from_the_given_environment(tmp_path: Path):
    assert environ.crab_home({"CRAB_HOME": str(tmp_path)}) == tmp_path
    assert environ.crab_home({}) == Path.home() / ".crab"
    assert environ.plugin_list({}) is None
    assert environ.plugin_list({"CRAB_PLUGINS": ""}) == ""  # set but empty: no plugins
    assert environ.strict_plugins({"CRAB_STRICT_PLUGINS": "1"}) is True
    assert environ.strict_plugins({"CRAB_STRICT_PLUGINS": "yes"}) is False
    overrides = environ.config_overrides({"CRAB_MODEL": "m", "CRAB_STORE": "", "CRAB_OTHER": "x"})
    assert overrides == {"crab.model": "m"}


def test_no_other_core_module_reads_a_crab_variable():
    readers = []
    for path in sorted((ROOT / "core" / "src" / "crab").rglob("*.py")):
        if path.name == "environ.py" or "testing" in path.parts:
            continue
        text = path.read_text()
        if re.search(r"(environ|getenv)\b.*[\"']CRAB_", text):
            readers.append(str(path.relative_to(ROOT)))
    assert readers == []
