"""Red team: ``/model`` lists the run's own model first (``* local/gpt-4.1``) but refuses it when
given as listed: "'gpt-4.1' is not a configured model of local (local has: none)". A model an
OpenAI-compatible endpoint does not list (its ``models`` table is empty, the common case for a
local server) is accepted by ``--model`` but can never be switched back to by its full name after
``/model`` went elsewhere, although ``/model`` offers it (the bare ``gpt-4.1`` works).

Found by driving ``crab chat`` with ``/model`` on an endpoint. Cause: ``resolve`` in
``crab/_values/model_choice.py`` takes the ``provider/model`` branch before comparing the spec with
the run's and the session's own choices, and then matches them by provider identity, which the
run's provider object does not share with the registry's. Now the run's and the session's
choices are matched first, by their listed names, and a provider by its name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("crab_provider_openai")


def test_model_accepts_the_runs_own_model_by_the_name_it_lists(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # Port 9 (discard): nothing listens; /model calls no model.
    (home / "config.toml").write_text('[plugins.provider-openai.endpoints.local]\nbase_url = "http://127.0.0.1:9/v1"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env.update(CRAB_HOME=str(home), NO_COLOR="1")
    done = subprocess.run(
        [sys.executable, "-m", "crab", "chat", "--plugins", "provider-openai", "--model", "local/gpt-4.1"],
        input="/model\n/model local/gpt-4.1\n",
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert "* local/gpt-4.1" in output  # offered
    assert "is not a configured model" not in output, output[-600:]  # and taken
