"""The tutorial at the top of docs/library.md runs as written: its Python blocks, in order, from the
repository's root on the mock provider (the scripts it names), print exactly its ``text`` block."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tutorial() -> tuple[str, str]:
    """The tutorial's program (its Python blocks joined) and the output it shows."""
    text = (ROOT / "docs" / "library.md").read_text()
    section = text[text.index("<!-- tutorial") : text.index("<!-- /tutorial -->")]
    code = "\n".join(re.findall(r"```python\n(.*?)\n```", section, re.DOTALL))
    (shown,) = re.findall(r"```text\n(.*?)\n```", section, re.DOTALL)
    return code, shown


def test_the_tutorial_runs_as_written_and_prints_what_it_shows(tmp_path: Path):
    code, shown = tutorial()
    assert code.count("crab.Agent(") == 2 and "output_type=Trip" in code and "message_history=" in code
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.strip() == shown.strip()
