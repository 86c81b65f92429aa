"""What a plugin ``crab plugin new`` made installs crab from, when crab does not run from a checkout:
the place pip installed crab-core (and the provider kit) from, never a bare ``crab-core==X`` that
no public index holds, unless nothing else is known, and then the README says where pip finds it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from crab._cli import plugin_new
from crab._version import __version__


def installed(site: Path, name: str, direct_url: dict[str, object] | None) -> None:
    """A real dist-info for ``name`` in ``site``, with pip's ``direct_url.json`` when given."""
    info = site / f"{name.replace('-', '_')}-{__version__}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {__version__}\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))


def readme_command(readme: str) -> str:
    return readme.split("<!-- test-command -->\n```sh\n", 1)[1].split("\n", 1)[0]


@pytest.fixture
def not_a_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(plugin_new, "core_checkout", lambda: None)
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    return site


@pytest.mark.parametrize("kind", ["tool", "provider", "channel"])
def test_the_readme_installs_crab_from_where_pip_installed_it(not_a_checkout: Path, tmp_path: Path, kind: str):
    core_wheel = tmp_path / "wheels" / f"crab_core-{__version__}-py3-none-any.whl"
    installed(not_a_checkout, "crab-core", {"url": core_wheel.as_uri(), "archive_info": {}})
    testing_wheel = tmp_path / "wheels" / f"crab_testing-{__version__}-py3-none-any.whl"
    installed(not_a_checkout, "crab-testing", {"url": testing_wheel.as_uri(), "archive_info": {}})
    installed(
        not_a_checkout,
        "crab-provider-kit",
        {
            "url": "https://example.invalid/crab.git",
            "vcs_info": {"vcs": "git", "commit_id": "abc123"},
            "subdirectory": "kits/provider-kit",
        },
    )
    command = readme_command(plugin_new.render("x", kind, tmp_path / "x")["README.md"])
    assert "==" not in command, command
    assert f".venv/bin/pip install {core_wheel} {testing_wheel} " in command  # the test extra names crab-testing
    kit = "git+https://example.invalid/crab.git@abc123#subdirectory=kits/provider-kit"
    assert (kit in command) == (kind == "provider"), command


def test_without_a_recorded_place_the_readme_says_where_pip_finds_the_version(not_a_checkout: Path, tmp_path: Path):
    installed(not_a_checkout, "crab-core", None)  # from a --find-links folder: pip records no place
    installed(not_a_checkout, "crab-testing", None)
    readme = plugin_new.render("x", "channel", tmp_path / "x")["README.md"]
    assert f"crab-core=={__version__} crab-testing=={__version__}" in readme_command(readme)
    assert "no public index holds: add `--find-links FOLDER`" in readme
