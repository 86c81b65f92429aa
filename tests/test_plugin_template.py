"""plugin-template/ and ``crab plugin new``: one source, every kind lint-clean, bad input one line.

The packaged templates (core/src/crab/templates/plugin, shipped in crab-core's wheel) are the
source; plugin-template/ is what ``crab plugin new example --kind tool`` renders, kept identical
here. tests/test_distribution.py installs every kind from wheels and runs its own tests.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from crab._cli.plugin_new import KINDS, render
from crab.testing import run_cli

ROOT = Path(__file__).resolve().parents[1]
REGENERATE = "rm -rf plugin-template && crab plugin new example --kind tool --dir plugin-template"
SKIP = {"__pycache__", ".pytest_cache", ".venv", "build", "dist", ".ruff_cache", ".mypy_cache"}


def tree(folder: Path) -> dict[str, str]:
    return {
        path.relative_to(folder).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not SKIP & set(path.relative_to(folder).parts) and ".egg-info" not in str(path)
    }


def test_plugin_template_is_exactly_what_crab_plugin_new_renders():
    expected = render("example", "tool", ROOT / "plugin-template")
    actual = tree(ROOT / "plugin-template")
    assert sorted(actual) == sorted(expected), f"edit core/src/crab/templates/plugin, then: {REGENERATE}"
    for path, text in expected.items():
        assert actual[path] == text, f"plugin-template/{path} differs: edit the packaged template, then: {REGENERATE}"


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_is_a_complete_plugin_package(kind: str):
    name = f"ex-{kind}"
    package = f"crab_ex_{kind}"
    files = render(name, kind)
    project = tomllib.loads(files["pyproject.toml"])
    assert project["project"]["name"] == f"crab-{name}"
    assert project["project"]["entry-points"]["crab"] == {name: package}
    assert project["project"]["dependencies"][0].startswith(("crab-core>=", "crab-core[http]>="))
    for required in ("README.md", "LICENSE", f"src/{package}/py.typed", f"tests/test_{package}.py"):
        assert required in files
    hooks = ast.parse(files[f"src/{package}/__init__.py"])
    assert any(
        isinstance(node, ast.Assign) and node.targets[0].id == "CRAB_API"  # type: ignore[attr-defined]
        for node in hooks.body
    )
    # The hook module stays cheap: only crab and the standard library at its top level.
    top = {a.name.split(".")[0] for n in hooks.body if isinstance(n, ast.Import) for a in n.names}
    top |= {n.module.split(".")[0] for n in hooks.body if isinstance(n, ast.ImportFrom) and n.module}
    assert top <= {"crab", "__future__", "dataclasses", "pathlib"}, top
    assert "${" not in "".join(files.values())


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_rendered_text_is_about_the_new_plugin_not_the_example(kind: str):
    files = render("weather", kind)
    description = tomllib.loads(files["pyproject.toml"])["project"]["description"]
    assert description.startswith(f"weather: a {kind} plugin for crab, from the ")
    assert "word-counting tool" not in "".join(files.values())


def test_a_provider_depends_on_the_http_extra_and_the_others_do_not():
    for kind in KINDS:
        [core] = tomllib.loads(render("x", kind)["pyproject.toml"])["project"]["dependencies"]
        assert core.startswith("crab-core[http]>=" if kind == "provider" else "crab-core>="), (kind, core)


def readme_test_command(readme: str) -> str:
    return readme.split("<!-- test-command -->\n```sh\n", 1)[1].split("\n", 1)[0]


def test_the_readme_installs_crab_from_this_checkout_never_from_an_index(tmp_path: Path):
    command = readme_test_command(render("x", "tool", tmp_path / "x")["README.md"])
    core = Path(__file__).resolve().parents[1] / "core"
    install = command.split(".venv/bin/pip install ", 1)[1].split(" -e ", 1)[0].split()
    # crab-core and crab-testing (the test extra names it), both from this checkout
    assert [(tmp_path / "x" / path).resolve() for path in install] == [core, core.parent / "testing"]
    provider = readme_test_command(render("x", "provider", tmp_path / "x")["README.md"])
    assert "/kits/provider-kit" in provider  # crab-core[http] needs the kit, which no index holds


@pytest.mark.slow
def test_the_readme_test_command_works_as_written(tmp_path: Path):
    """Run the new plugin's README test command exactly as written, in the folder it was made for."""
    folder = tmp_path / "crab-x"
    for path, text in render("x", "tool", folder).items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    command = readme_test_command((folder / "README.md").read_text())
    result = subprocess.run(
        ["bash", "-c", command], cwd=folder, capture_output=True, text=True, timeout=900, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout


def test_every_kind_renders_lint_clean(tmp_path: Path):
    for kind in KINDS:
        target = tmp_path / f"ex-{kind}"
        for path, text in render(f"ex-{kind}", kind).items():
            (target / path).parent.mkdir(parents=True, exist_ok=True)
            (target / path).write_text(text)
    for args in (["check", "--no-cache", "."], ["format", "--check", "--no-cache", "."]):
        result = subprocess.run(
            [sys.executable, "-m", "ruff", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_crab_plugin_new_writes_the_folder_and_says_what_next(crab_home: Path):
    result = run_cli("plugin", "new", "word-count")
    assert result.exit_code == 0, result.stderr
    folder = Path.cwd() / "crab-word-count"
    assert tree(folder) == render("word-count", "tool", folder)
    assert "created crab-word-count (tool plugin)" in result.stdout
    assert "crab plugins install -e" in result.stdout
    assert f"-e '{folder}[test]'" in result.stdout  # the extra brings pytest, which the next command runs
    empty = Path.cwd() / "empty"
    empty.mkdir()
    assert run_cli("plugin", "new", "other", "--kind", "store", "--dir", str(empty)).exit_code == 0
    assert (empty / "src" / "crab_other" / "store.py").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["Word_Count"], "use lower-case letters, digits and single hyphens"),
        (["1st"], "use lower-case letters"),
        (["a--b"], "use lower-case letters"),
        (["../escape"], "use lower-case letters"),
        (["x" * 41], "at most 40 characters"),
        (["crab-thing"], "leave out the crab- prefix"),
        (["fine", "--kind", "database"], "unknown kind 'database': pick one of tool, provider, store"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(crab_home: Path, args: list[str], message: str):
    result = run_cli("plugin", "new", *args)
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
    assert list(Path.cwd().iterdir()) == []


def test_an_existing_folder_is_never_written_into(crab_home: Path):
    taken = Path.cwd() / "crab-taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    result = run_cli("plugin", "new", "taken")
    assert result.exit_code == 2
    assert result.stderr.strip() == f"crab: {taken} already exists and is not empty: pick a new folder with --dir PATH"
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    (Path.cwd() / "a-file").write_text("x")
    assert run_cli("plugin", "new", "x", "--dir", "a-file").exit_code == 2
