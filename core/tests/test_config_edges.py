"""Config and input edges, end to end with the real ``crab`` command: config paths that are not
files, oversized files and values, unbounded numbers, and usage errors, each one line and exit 2."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from crab._cli.errors import LINE_LIMIT, bounded


@pytest.fixture
def env(fake_site: Any) -> dict[str, str]:
    environment = fake_site(["scripted", "configured"])
    environment["CRAB_PLUGINS"] = "scripted,configured"
    Path(environment["CRAB_HOME"]).mkdir(parents=True, exist_ok=True)
    return environment


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"replies": [[{"text": "the answer"}]]}))
    return path


def user_config(env: dict[str, str]) -> Path:
    return Path(env["CRAB_HOME"]) / "config.toml"


def one_line(text: str) -> str:
    assert text.endswith("\n") and text.count("\n") == 1, text
    return text.strip()


def test_a_fifo_as_the_user_config_is_one_line_not_a_hang(crab_run: Any, env: dict[str, str], tmp_path: Path) -> None:
    os.mkfifo(user_config(env))
    result = crab_run(["config", "show"], env, cwd=tmp_path)  # crab_run's timeout: a hang fails
    assert result.returncode == 2
    assert (
        one_line(result.stderr)
        == f"crab: {user_config(env)}: cannot read config: it is a FIFO, not a file (make it a TOML file)"
    )


@pytest.mark.parametrize(("make", "kind"), [("folder", "a folder"), ("device", "a device")])
def test_a_user_config_that_is_not_a_file_is_an_error(
    crab_run: Any, env: dict[str, str], script: Path, tmp_path: Path, make: str, kind: str
) -> None:
    if make == "folder":
        user_config(env).mkdir()
    else:
        user_config(env).symlink_to("/dev/zero")  # a device read to no end
    result = crab_run(["run", "-m", f"scripted/{script}", "go"], env, cwd=tmp_path)
    assert result.returncode == 2
    assert f"cannot read config: it is {kind}, not a file" in one_line(result.stderr)


@pytest.mark.parametrize(("make", "kind"), [("folder", "a folder"), ("device", "a device"), ("fifo", "a FIFO")])
def test_a_project_config_that_is_not_a_file_is_one_warning_and_ignored(
    crab_run: Any, env: dict[str, str], script: Path, tmp_path: Path, make: str, kind: str
) -> None:
    work = tmp_path / "work"
    (work / ".crab").mkdir(parents=True)
    config = work / ".crab" / "config.toml"
    if make == "folder":
        config.mkdir()
    elif make == "device":
        config.symlink_to("/dev/zero")
    else:
        os.mkfifo(config)
    result = crab_run(["run", "-m", f"scripted/{script}", "go"], env, cwd=work)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "the answer\n"
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: {config}: cannot read config: it is {kind}, not a file (make it a TOML file); it is ignored"
    ]


def test_a_config_over_a_mebibyte_is_refused(crab_run: Any, env: dict[str, str], tmp_path: Path) -> None:
    user_config(env).write_text('[crab]\nstore = "' + "x" * 3_000_000 + '"\n')
    result = crab_run(["config", "show"], env, cwd=tmp_path)
    assert result.returncode == 2
    assert "cannot read config: it is over 1 MiB" in one_line(result.stderr)


def test_a_huge_value_is_cut_in_the_error_line(
    crab_run: Any, env: dict[str, str], script: Path, tmp_path: Path
) -> None:
    user_config(env).write_text('[crab]\nstore = "' + "x" * 500_000 + '"\n')
    result = crab_run(["run", "-m", f"scripted/{script}", "go"], env, cwd=tmp_path)
    assert result.returncode == 2
    line = one_line(result.stderr)
    assert len(line) <= LINE_LIMIT
    assert "'" + "x" * 80 + "…'" in line


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            "[crab]\nmax_iterations = 99999999999999999999\n",
            "crab.max_iterations: expected a whole number >= 1 <= 10000",
        ),
        ("[crab]\nmax_iterations = 10001\n", "crab.max_iterations: expected a whole number >= 1 <= 10000"),
        ("[crab]\ntool_timeout = 1e300\n", "crab.tool_timeout: expected a number > 0 <= 86400"),
        # A plugin's whole number with no declared maximum is still bounded to 64 bits.
        (
            "[plugins.configured]\ntimes = 99999999999999999999\n",
            "plugins.configured.times: expected a whole number >= 1",
        ),
    ],
)
def test_numbers_are_bounded(
    crab_run: Any, env: dict[str, str], script: Path, tmp_path: Path, toml: str, expected: str
) -> None:
    user_config(env).write_text(toml)
    result = crab_run(["run", "-m", f"scripted/{script}", "go"], env, cwd=tmp_path)
    assert result.returncode == 2
    assert expected in one_line(result.stderr)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["run", "--output", "xml", "hi"],
            "crab run: Invalid value for '--output' / '-o': 'xml' is not one of 'text', 'json', 'jsonl'."
            " (see `crab run --help`)",
        ),
        (["run"], "crab run: Missing argument 'prompt'. (see `crab run --help`)"),
        (["nosuch"], "crab: No such command 'nosuch'. (see `crab --help`)"),
        (["run", "--nosuchthing", "hi"], "crab run: No such option: --nosuchthing (see `crab run --help`)"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(crab_run: Any, env: dict[str, str], tmp_path: Path, args, line) -> None:
    result = crab_run(args, env, cwd=tmp_path)
    assert result.returncode == 2
    # Click may add a suggestion of a close name ("--nosuchthing" is near "--thinking"); it is
    # welcome on the same line, and which names are close changes whenever an option is added.
    assert SUGGESTION.sub("", one_line(result.stderr)) == line


SUGGESTION = re.compile(r" \(Possible options: [^)]*\)| Did you mean [^?]*\?")


def test_bounded_cuts_quoted_values_and_the_line() -> None:
    assert bounded("no store named 'abc'") == "no store named 'abc'"
    assert bounded(f"no store named '{'x' * 200}' is loaded") == f"no store named '{'x' * 80}…' is loaded"
    assert bounded(f'found "{"y" * 81}"') == f'found "{"y" * 80}…"'
    assert bounded("two\nlines") == "two lines"
    long = bounded("z" * 5000)
    assert len(long) == LINE_LIMIT and long.endswith("…")


def test_a_warning_at_setup_is_bounded_too(crab_run: Any, env: dict[str, str], tmp_path: Path) -> None:
    name = "n" * 5000
    user_config(env).write_text(f'[plugins."{name}"]\nx = 1\n')
    env = {**env, "CRAB_PLUGINS": "configured"}  # no provider: setup fails and shows its notices
    result = crab_run(["run", "go"], env, cwd=tmp_path)
    assert result.returncode == 2
    [warning] = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == LINE_LIMIT and warning.endswith("…")


def test_crab_home_follows_its_variables_though_it_is_remembered(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """crab_home() is remembered per ($CRAB_HOME, $HOME): each change still gives the new folder."""
    import pwd

    from crab._config.environ import crab_home

    monkeypatch.setenv("HOME", str(tmp_path / "h1"))
    monkeypatch.setenv("CRAB_HOME", str(tmp_path / "a"))
    assert crab_home() == tmp_path / "a"
    monkeypatch.setenv("CRAB_HOME", "~/b")
    assert crab_home() == tmp_path / "h1" / "b"
    monkeypatch.setenv("HOME", str(tmp_path / "h2"))
    assert crab_home() == tmp_path / "h2" / "b"
    monkeypatch.delenv("CRAB_HOME")
    assert crab_home() == tmp_path / "h2" / ".crab"
    assert crab_home() is crab_home()
    assert crab_home({"CRAB_HOME": str(tmp_path / "given")}) == tmp_path / "given"
    monkeypatch.setenv("HOME", str(tmp_path / "h1"))
    assert crab_home() == tmp_path / "h1" / ".crab"
    monkeypatch.delenv("HOME")
    assert crab_home() == Path(pwd.getpwuid(os.getuid()).pw_dir) / ".crab"
