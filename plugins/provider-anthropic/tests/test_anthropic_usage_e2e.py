"""End to end: the usage a run reports is counted once per model call and priced once, by the
loop, from the model's table, cache writes at ``cache_write_price`` (the provider prices nothing).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from crab.testing import CRAB, run_crab

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CRAB is None, reason="the crab console script is not installed in this environment"),
]


def test_one_priced_usage_event_per_model_call(server: Any, isolated_home: Path, api_key: str) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(
        "[plugins.provider-anthropic]\n"
        f'base_url = "{server.url}"\n'
        'api_key_env = "CRAB_TEST_ANTHROPIC_KEY"\n'
        "retry_base_delay = 0.01\n"
        '[plugins.provider-anthropic.models."claude-sonnet-4-5"]\n'
        "input_price = 3.0\noutput_price = 15.0\ncache_read_price = 0.3\ncache_write_price = 3.75\n"
    )
    server.script(server.sse("text_usage.sse"))
    done = run_crab(
        isolated_home,
        "run",
        "hi",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--output",
        "jsonl",
        env={"CRAB_TEST_ANTHROPIC_KEY": api_key},
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    (usage,) = [e["usage"] for e in events if e["type"] == "usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (25, 15)
    assert (usage["cache_read_tokens"], usage["cache_write_tokens"]) == (2000, 1000)
    assert usage["cost"] == pytest.approx((25 * 3.0 + 15 * 15.0 + 2000 * 0.3 + 1000 * 3.75) / 1e6)


@pytest.mark.skipif(
    importlib.util.find_spec("crab_tape_jsonl") is None, reason="no session store that outlives a process is installed"
)
def test_cache_reads_and_writes_show_in_output_json_and_sessions_show(
    server: Any, isolated_home: Path, api_key: str
) -> None:
    """``--output json`` and ``crab sessions show`` (text and ``--json``, from a jsonl store that
    keeps no totals) carry the cache counts and their price."""
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(
        "[plugins.provider-anthropic]\n"
        f'base_url = "{server.url}"\n'
        'api_key_env = "CRAB_TEST_ANTHROPIC_KEY"\n'
        '[plugins.provider-anthropic.models."claude-sonnet-4-5"]\n'
        "input_price = 3.0\noutput_price = 15.0\ncache_read_price = 0.3\ncache_write_price = 3.75\n"
    )
    server.script(server.sse("text_usage.sse"))
    env = {"CRAB_TEST_ANTHROPIC_KEY": api_key}
    done = run_crab(isolated_home, "run", "hi", "--model", "anthropic/claude-sonnet-4-5", "--output", "json", env=env)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    usage = document["usage"]
    assert (usage["cache_read_tokens"], usage["cache_write_tokens"]) == (2000, 1000)
    shown = run_crab(isolated_home, "sessions", "show", document["session_id"], env=env)
    assert shown.returncode == 0, shown.stderr
    assert "usage 25 in, 15 out, 2000 cache read, 1000 cache write, $0.00" in shown.stdout
    as_json = run_crab(isolated_home, "sessions", "show", document["session_id"], "--json", env=env)
    stored = json.loads(as_json.stdout)["session"]["usage"]
    assert (stored["cache_read_tokens"], stored["cache_write_tokens"]) == (2000, 1000)
    assert stored["cost"] == pytest.approx((25 * 3.0 + 15 * 15.0 + 2000 * 0.3 + 1000 * 3.75) / 1e6)
