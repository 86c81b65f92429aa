"""``/skill:name request`` through the real ``crab run -o json``: the document carries the model's
answer (the turn the command ran), as Telegram's outcome does, not an empty command result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_slash_skill_in_crab_run_json_answers_with_the_turn(tmp_path: Path):
    home, work = tmp_path / "home", tmp_path / "work"
    skill = home / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greet\ndescription: Greet people politely.\n---\nSay hello.\n")
    work.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [[{"text": "Hello, Ada!"}]]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(home), CRAB_PLUGINS="provider-mock,skills")
    result = subprocess.run(
        [sys.executable, "-m", "crab", "run", "-m", f"mock/{script}", "-o", "json", "/skill:greet Ada"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["stop"], doc["text"], doc["error"]) == ("end", "Hello, Ada!", None)
