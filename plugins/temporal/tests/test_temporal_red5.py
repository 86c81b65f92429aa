"""Red team (red5): ``crab worker`` from outside. A worker is an agent that runs unattended, so
what its agent would say (a project's trust-only settings it ignored, a plugin that failed) must
reach its stderr: the worker starts with no renderer, and its notices went nowhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from temporal_site import Site, free_port

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crab-temporal-server")]


@pytest.mark.xfail(strict=True, reason="red5: crab_temporal/cli.py worker_command's agent has no renderer nor listener")
def test_a_worker_in_an_untrusted_project_says_which_settings_it_ignored(site: Site):
    # A cloned repository names another task queue (and so other workers' permissions) and another
    # Temporal: both are trust-only, so the worker keeps the user's, and says so in one line, as
    # `crab run` does in the same folder.
    (site.workspace / ".crab").mkdir()
    (site.workspace / ".crab" / "config.toml").write_text(
        '[plugins.temporal]\ntask_queue = "elsewhere"\naddress = "127.0.0.1:1"\n'
    )
    site.write_script([[{"text": "hi"}]])
    worker = site.start_worker("a")
    log = worker.log.read_text(errors="replace")
    assert f"task queue {site.task_queue}" in log  # the user's queue, not the project's
    warnings = [line for line in log.splitlines() if "ignored trust-only settings" in line]
    assert len(warnings) == 1, log
    assert "plugins.temporal.task_queue" in warnings[0] and "crab trust" in warnings[0]


@pytest.mark.xfail(
    strict=True, reason="red5: crab_temporal/client.py connect passes a URL on to temporalio, which warns"
)
def test_an_address_written_as_a_url_is_one_line_and_exit_2(tmp_path: Path):
    # `address = "http://…"` is what a newcomer writes for a server; temporalio warns (two lines of
    # its own source on stderr) before crab's line: bad config must be one line saying what to do.
    home, workspace = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    workspace.mkdir()
    (home / "config.toml").write_text(f'[plugins.temporal]\naddress = "http://127.0.0.1:{free_port()}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-m", "crab", "worker", "--plugins", "provider-mock,temporal", "-m", "mock/tour"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "address" in done.stderr
