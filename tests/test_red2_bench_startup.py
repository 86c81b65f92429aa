"""Red team (issue 40, second pass): ``bench/startup.py --baseline REV`` compares like with like.

Today's plugins on an older core fail on the API they use now (crab-checkpoints on 6080b0e:
``cannot import name 'preview_diffs' from 'crab'``), every tool of the tour is refused, and the
cheaper broken run read as a 5% CPU regression of ``crab run``. The baseline takes the plugins and
kits of its revision too, and a command whose output says a plugin failed stops the bench."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]

# The line crab printed for each tool of `crab run -m mock/tour hi` with 6080b0e's core and main's plugins.
REFUSED = (
    "  ✗ ls: Refused: plugin checkpoints failed: crab_commands raised ImportError: cannot import "
    "name 'preview_diffs' from 'crab' (/…"
)


def _startup() -> ModuleType:
    """``bench/startup.py`` (bench/ is no package and stays off ``sys.path``)."""
    spec = importlib.util.spec_from_file_location("red2_bench_startup", ROOT / "bench" / "startup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_run_that_says_a_plugin_failed_is_not_measured() -> None:
    startup = _startup()
    assert startup.plugin_failures(f"→ ls(path='.')\n{REFUSED}\nThat was crab's scripted tour") == [REFUSED.strip()]
    assert startup.plugin_failures("→ grep(pattern='failed')\n  ✓ grep: the plugin list failed nothing") == []


def test_the_baseline_brings_its_plugins_and_kits_and_both_sides_search_the_same_path_shape(tmp_path: Path) -> None:
    startup = _startup()
    folders = startup.baseline_tree("HEAD", tmp_path)
    assert folders[0] == tmp_path / "core" / "src" and (folders[0] / "crab" / "__init__.py").is_file()
    names = [f.relative_to(tmp_path).as_posix() for f in folders]
    assert "plugins/checkpoints/src" in names and "kits/provider-kit/src" in names
    assert names == [f.relative_to(ROOT).as_posix() for f in startup.source_folders(ROOT)]
