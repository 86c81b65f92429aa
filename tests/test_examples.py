"""Every program in examples/ runs (on the mock provider, as a user would run it) and prints what it says."""

from __future__ import annotations

import os
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
