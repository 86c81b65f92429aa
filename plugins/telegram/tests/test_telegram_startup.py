"""``crab --help`` and ``crab plugins list`` import no Telegram code: neither python-telegram-bot
nor this plugin's implementation modules (only its top-level module, whose hooks are thin)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

MODULES_AFTER = """
import sys
sys.argv = ["crab", *sys.argv[1:]]
from crab._cli import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\nAFTER " + " ".join(sorted(sys.modules)) + "\\n")
"""


@pytest.mark.parametrize("args", [["--help"], ["plugins", "list"], ["telegram", "--help"]])
def test_fast_commands_import_no_telegram_code(args, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "TELEGRAM_"))}
    env.update(CRAB_HOME=str(tmp_path), CRAB_PLUGINS="telegram")
    done = subprocess.run(
        [sys.executable, "-c", MODULES_AFTER, *args], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(done.stderr.rsplit("\nAFTER ", 1)[1].split())
    assert "crab_telegram" in loaded  # the plugin was loaded, so the check means something
    telegram = sorted(m for m in loaded if m.split(".")[0] in ("telegram", "aiolimiter", "httpx"))
    assert telegram == []
    assert sorted(m for m in loaded if m.startswith("crab_telegram.")) == []
