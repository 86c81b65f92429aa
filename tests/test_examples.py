"""Every program in examples/ runs (on the mock provider, as a user would run it) and prints what it says."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

EXPECTED: dict[str, list[str]] = {
    "one_shot.py": [
        "crab is a small agent framework in which everything is a plugin.",
        "stop: end, tokens: 120 in / 14 out",
        "session: ",
    ],
    "streaming.py": [
        "Let me look. ",
        "[calling ls {'path': '.'}]",
        "[ls answered: ",
        "This folder holds crab's example programs and the scripts the mock model replays.",
        "1 tool call, stop: end",
    ],
    "custom_tool.py": ["word_count({'text': 'the quick brown fox'}) -> 4", "There are 4 words in it."],
    "permission_callback.py": [
        'asked to allow write: write_note(name="shopping", text="milk, bread") -> once',
        'asked to allow write: write_note(name="secret", text="the launch codes") -> deny',
        "shopping: saved shopping",
        "secret: refused",
        "notes kept: ['shopping']",
        "I saved the shopping list; the secret note was refused.",
    ],
    "resume_session.py": [
        "first run: Nice to meet you, Ada. (session ",
        "resumed:   You told me your name is Ada. (session ",
        "same session: True",
    ],
}


def test_every_example_is_checked():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


def quickstart_plugins() -> set[str]:
    """The plugins the README's Quickstart command installs."""
    readme = (ROOT / "README.md").read_text()
    command = next(line for line in readme.splitlines() if line.startswith("python3 -m venv") and "./core" in line)
    return set(re.findall(r"\./plugins/([a-z0-9-]+)", command))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_says_which_plugins_it_needs_and_how_to_install_the_others(name: str):
    source = (EXAMPLES / name).read_text()
    doc = ast.get_docstring(ast.parse(source)) or ""
    needs = doc[doc.index("Needs: ") :] if "Needs: " in doc else ""
    assert needs, f"{name}'s docstring has no 'Needs: ' paragraph naming the plugins it loads"
    loaded = {
        item.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.keyword) and node.arg == "plugins" and isinstance(node.value, ast.List)
        for item in node.value.elts
        if isinstance(item, ast.Constant)
    }
    for plugin in loaded:
        assert f"crab-{plugin}" in needs, f"{name} loads {plugin}: its 'Needs: ' must name crab-{plugin}"
        if plugin not in quickstart_plugins():
            assert f"./plugins/{plugin}" in needs, (
                f"{name} needs {plugin}, which the Quickstart does not install: say how"
            )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_and_prints_what_it_says(name: str, tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # nothing is printed unless the program prints it
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == len(EXPECTED[name]), result.stdout
    for line, expected in zip(lines, EXPECTED[name], strict=True):
        assert line.startswith(expected), (line, expected)


def test_the_readme_python_example_runs(tmp_path: Path):
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## crab from Python") :]
    code = section[
        section.index("```python\n") + len("```python\n") : section.index("\n```", section.index("```python"))
    ]
    (tmp_path / "notes.md").write_text("# notes\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "scripted tour" in result.stdout
    assert "['ls', 'glob', 'grep']" in result.stdout
