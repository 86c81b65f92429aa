"""Red team (red5): ``crab worker`` from outside. A worker is an agent that runs unattended, so
what its agent would say (a project's trust-only settings it ignored, a plugin that failed) must
reach its stderr: the worker starts with no renderer, and its notices went nowhere."""

from __future__ import annotations

import pytest
from temporal_site import Site

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
