"""One status per plugin, computed by the host and shown one way: ``crab doctor`` calls every hook
``crab run`` calls (``crab_startup`` included) and names the same failures ``crab run`` warns about;
``crab plugins list`` shows the loading statuses in the same format and calls no hook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

NAMES = ["broken-table", "broken-startup", "docs-provider"]


@pytest.fixture
def env(fake_site: Any) -> dict[str, str]:
    environment = fake_site(NAMES)
    environment["CRAB_PLUGINS"] = ",".join(NAMES)
    return environment


TABLE = "plugin broken-table failed: crab_config_table raised RuntimeError: table boom"
STARTUP = "plugin broken-startup failed: crab_startup raised ConnectionError: cannot reach the service"


def statuses(text: str) -> dict[str, str]:
    """``name → status`` from the status lines (``name  status  distribution``)."""
    found = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in NAMES and parts[1] in ("loaded", "failed", "disabled"):
            found[parts[0]] = parts[1]
    return found


def test_doctor_names_the_failures_crab_run_warns_about(crab_run: Any, env: dict[str, str], tmp_path: Path) -> None:
    run = crab_run(["run", "hello"], env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "from http://127.0.0.1:9\n"  # the docs' provider works with its defaults
    warned = {line.removeprefix("warning: ") for line in run.stderr.splitlines() if line.startswith("warning: ")}
    assert warned == {TABLE, STARTUP}

    doctor = crab_run(["doctor"], env, cwd=tmp_path)
    failed = {line.removeprefix("FAIL  ") for line in doctor.stdout.splitlines() if line.startswith("FAIL  ")}
    assert failed == warned  # the same lines, each once
    assert doctor.returncode == 1
    assert statuses(doctor.stdout) == {"broken-table": "failed", "broken-startup": "failed", "docs-provider": "loaded"}
    assert "ok    plugins loaded: docs-provider" in doctor.stdout
    assert "ok    provider: docs/docs-model is ready" in doctor.stdout


def test_plugins_list_shows_the_loading_status_in_the_same_format(
    crab_run: Any, env: dict[str, str], tmp_path: Path
) -> None:
    listed = crab_run(["plugins", "list"], env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    # No hook is called here: what loading computes, and where the hooks' own checks are.
    assert statuses(listed.stdout) == {"broken-table": "loaded", "broken-startup": "loaded", "docs-provider": "loaded"}
    assert "`crab doctor` calls each one, crab_startup included" in listed.stdout
    assert "KeyError" not in listed.stdout + listed.stderr
    models = crab_run(["models", "--json"], env, cwd=tmp_path)
    assert models.returncode == 0, models.stderr
    assert "docs-model" in json.dumps(json.loads(models.stdout))
