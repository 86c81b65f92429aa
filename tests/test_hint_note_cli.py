"""A reply that only names a tool (``$grep``) ends the turn under the real ``crab run``, with plain
and with rich: naming a tool costs no model call (issue 38; it used to get one more step, shown
as "full schema sent")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("renderer", ["plain", "rich"])
def test_a_hint_only_reply_ends_the_turn(tmp_path: Path, renderer: str):
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [[{"text": "I will use $grep."}], [{"text": "Done, nothing found."}]]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(tmp_path / "home"), CRAB_PLUGINS="provider-mock,tools-basic,render-rich")
    result = subprocess.run(
        [sys.executable, "-m", "crab", "run", "--renderer", renderer, "-m", f"mock/{script}", "find it"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "I will use $grep." in result.stdout and "Done, nothing found." not in result.stdout
    assert "full schema sent" not in result.stderr
