"""End to end: the usage a run reports is counted once per model call and priced once, by the
loop, from the model's table, cache writes at ``cache_write_price`` (the provider prices nothing).
"""

from __future__ import annotations

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
