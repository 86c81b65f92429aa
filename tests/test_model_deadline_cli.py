"""A model call has a deadline, through the real ``crab`` command and the openai provider plugin
(issue 9, item 6): a server on 127.0.0.1 that sends keep-alive comments forever, or accepts the
request and never answers, ends the run within ``[crab] request_timeout`` (2 s here), with one
line that names the limit and the key that raises it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crab.testing.http_replay import HttpReply, ReplayServer


def _run(tmp_path: Path, server: ReplayServer, *extra: str) -> tuple[subprocess.CompletedProcess[str], float]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        "[plugins.provider-openai]\n"
        f'base_url = "{server.url}"\n'
        'api_key_env = "CRAB_TEST_OPENAI_KEY"\n'
        "idle_timeout = 60.0\n"
        "max_retries = 5\n"
        "retry_base_delay = 0.01\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env.update(CRAB_HOME=str(home), CRAB_PLUGINS="provider-openai", CRAB_TEST_OPENAI_KEY="test-key-not-real")
    command = [sys.executable, "-m", "crab", "run", "--provider", "openai", "--model", "gpt-4.1-mini"]
    started = time.monotonic()
    result = subprocess.run(
        [*command, "--set", "crab.request_timeout=2", *extra, "hello"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result, time.monotonic() - started


@pytest.mark.parametrize("output", ["text", "jsonl"])
def test_keepalive_comments_forever_end_at_request_timeout(tmp_path, output):
    with ReplayServer() as server:
        server.script(HttpReply(keepalive_every=0.2))
        result, elapsed = _run(tmp_path, server, "-o", output)
    assert result.returncode == 1
    shown = result.stderr if output == "text" else result.stdout
    assert "request_timeout (2 s)" in shown and "raise [crab] request_timeout" in shown
    assert "Traceback" not in result.stderr
    assert elapsed < 30  # idle_timeout is 60 s: only request_timeout can have ended it


def test_a_server_that_never_answers_ends_at_request_timeout(tmp_path):
    with ReplayServer() as server:
        server.script(*[HttpReply(silent=True) for _ in range(6)])
        result, elapsed = _run(tmp_path, server)
    assert result.returncode == 1
    assert "no complete reply" in result.stderr and "within request_timeout (2 s)" in result.stderr
    assert "raise [crab] request_timeout" in result.stderr
    assert len(server.requests) == 1  # one attempt, cut at the deadline: not 6 x 60 s
    assert elapsed < 30
