"""``crab._config.environ``: the one place ``CRAB_*`` variables are read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from crab._config import environ
from crab._contracts.errors import ConfigError

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


def test_no_home_folder_at_all_is_one_config_error(monkeypatch: pytest.MonkeyPatch):
    # A container's arbitrary uid: no $HOME and no passwd entry, so Path.home() raises.
    import pwd

    def no_entry(uid: int) -> pwd.struct_passwd:
        raise KeyError(uid)

    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    with pytest.raises(ConfigError, match=r"set \$CRAB_HOME \(or \$HOME\)"):
        environ.crab_home({})
    assert environ.crab_home({"CRAB_HOME": "/somewhere"}) == Path("/somewhere")
