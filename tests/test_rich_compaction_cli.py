"""crab-render-rich under the real ``crab run``: a compaction (core's ``CompactionEvent``) and the
progressive view's ``[crab]`` note are shown, as the plain renderer shows them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _crab(work: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(home), CRAB_PLUGINS="provider-mock,render-rich,store-sqlite")
    return subprocess.run(
        [sys.executable, "-m", "crab", "run", "--store", "sqlite", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _script(path: Path, *texts: str) -> str:
    path.write_text(json.dumps({"replies": [[{"text": t}] for t in texts]}))
    return f"mock/{path}"


def test_rich_shows_a_threshold_compaction_and_its_failure(tmp_path: Path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    first = _crab(work, home, "--renderer", "rich", "-m", _script(tmp_path / "a.json", "First. " + "word " * 150), "hi")
    assert first.returncode == 0, first.stderr
    script = _script(tmp_path / "b.json", "SUMMARY: greeted.", "Second answer.")
    second = _crab(work, home, "--renderer", "rich", "-c", "--set", "crab.context_window=600", "-m", script, "again")
    assert second.returncode == 0, second.stderr
    assert "Second answer." in second.stdout
    assert "compacting 2 older messages (the context is filling up)" in second.stderr
    assert "compacted 2 messages into a summary, 1 kept verbatim" in second.stderr
    by_hand = _crab(work, home, "--renderer", "rich", "-c", "-m", script, "/compact")
    assert by_hand.returncode == 0, by_hand.stderr
    assert "compacting 1 older messages (/compact)" in by_hand.stderr
    # With nothing older to summarise (a new session): one plain line, and nothing failed.
    empty = _crab(work, home, "--renderer", "rich", "-m", script, "/compact")
    assert empty.returncode == 0, empty.stderr
    assert "nothing to compact yet: there is no older history to summarise" in empty.stdout + empty.stderr
    assert "compaction failed" not in empty.stdout + empty.stderr


def test_rich_status_line_uses_the_window_the_budget_uses(tmp_path: Path):
    """``[crab] context_window`` (what compaction measures against) is also what the status line's
    "context N% of W" is of, not the provider's figure for the model."""
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "usage.json"
    script.write_text(
        json.dumps({"replies": [[{"text": "ok"}, {"usage": {"input_tokens": 500, "output_tokens": 10}}]]})
    )
    result = _crab(
        work, tmp_path / "home", "--renderer", "rich", "--set", "crab.context_window=2000", "-m", f"mock/{script}", "hi"
    )
    assert result.returncode == 0, result.stderr
    assert "context 26% of 2.0k" in result.stderr
