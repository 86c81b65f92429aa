"""``crab plugins install|uninstall`` and ``crab --version``: what they decide without running pip.

tests/test_distribution.py runs both commands for real (pip in a fresh venv, beside a broken
plugin); here: the names pip is given, the config edits, and a malformed config stopping
``install`` before pip runs; ``--version`` listing plugins from metadata without importing them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from crab._cli.config_files import forget_plugin
from crab._cli.plugins_cmd import pip_spec, spec_distribution
from crab.testing import run_cli


@pytest.mark.parametrize(
    ("spec", "given"),
    [
        ("tools-basic", "crab-tools-basic"),  # a plugin's name means its distribution
        ("crab-tools-basic", "crab-tools-basic"),
        ("crab-foo==0.2", "crab-foo==0.2"),
        ("requests>=2", "requests>=2"),  # anything that is not a bare name is pip's to read
        ("./crab-foo", "./crab-foo"),
        ("dist/crab_foo-0.1.0-py3-none-any.whl", "dist/crab_foo-0.1.0-py3-none-any.whl"),
    ],
)
def test_pip_is_given_the_distribution_for_a_bare_plugin_name(spec: str, given: str):
    assert pip_spec(spec) == given


def test_a_folder_named_like_a_plugin_is_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "word-count").mkdir()
    assert pip_spec("word-count") == "word-count"


def test_the_distribution_of_a_spec_is_known_before_pip_runs(tmp_path: Path):
    """So reinstalling a plugin already installed (an author's folder, again) still records it."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "pyproject.toml").write_text('[project]\nname = "crab_Word.Count"\n')
    assert spec_distribution(str(folder)) == "crab-word-count"
    assert spec_distribution(f"{folder}[test]") == "crab-word-count"
    assert spec_distribution("dist/crab_word_count-0.1.0-py3-none-any.whl") == "crab-word-count"
    assert spec_distribution("crab-foo==0.2") == "crab-foo"
    assert spec_distribution("crab-foo[test]>=1") == "crab-foo"
    (tmp_path / "no-project").mkdir()
    assert spec_distribution(str(tmp_path / "no-project")) == ""


def test_forget_plugin_keeps_comments_and_other_names(tmp_path: Path):
    path = tmp_path / "config.toml"
    path.write_text('# mine\n[plugins]\nenabled = ["a", "gone"]  # order matters\ndisabled = ["gone"]\n')
    assert forget_plugin(path, "gone") is True
    assert path.read_text() == '# mine\n[plugins]\nenabled = ["a"]  # order matters\ndisabled = []\n'
    before = path.read_text()
    assert forget_plugin(path, "never") is False
    assert path.read_text() == before
    assert forget_plugin(tmp_path / "missing.toml", "x") is False
    assert not (tmp_path / "missing.toml").exists()


def test_a_malformed_user_config_stops_install_before_pip(crab_home: Path):
    (crab_home / "config.toml").write_text("[plugins\n")
    result = run_cli("plugins", "install", "word-count")
    assert result.exit_code == 2
    assert "$ python -m pip" not in result.stderr
    assert f"{crab_home / 'config.toml'}:1:" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_uninstall_names_what_is_not_installed_in_one_line(crab_home: Path):
    result = run_cli("plugins", "uninstall", "no-such-plugin")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "crab: no installed plugin or distribution 'no-such-plugin'; `crab plugins list` shows the names"
    )
    core = run_cli("plugins", "uninstall", "crab-core")
    assert core.exit_code == 2 and "crab-core is crab itself" in core.stderr


def test_version_lists_each_plugin_from_metadata_without_importing_it(crab_run, fake_site, tmp_path: Path):
    env = fake_site(["good", "import-error", "broken-tools", "recorder"])
    result = crab_run(["--version"], env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("crab ")
    assert "  crab-fake-good 0.0.1  (good)" in lines
    assert "  crab-fake-import-error 0.0.1  (import-error)" in lines
    assert "  crab-fake-broken 0.0.1  (broken-tools)" in lines
    assert "  crab-fake-recorder 0.0.1  (recorder)" in lines
    assert not (tmp_path / "imports.log").exists()  # the recorder logs its import: none happened
