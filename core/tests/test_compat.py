"""API 1.x compatibility: every module path that moved into core's subpackages still imports."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest
from crab import _compat


@pytest.mark.parametrize(("old", "new"), sorted(_compat.MOVED.items()))
def test_an_old_module_path_is_the_module_that_moved_with_a_warning(old: str, new: str) -> None:
    target = importlib.import_module(new)
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    if old == "crab.render":  # was a package, is a module now: a package stands for it
        assert module.Renderer is target.Renderer
    else:
        assert module is target


def test_importing_from_an_old_path_gives_the_same_objects() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from crab.loop.agent import Agent as OldAgent  # type: ignore[import-not-found]
        from crab.tools import Tool as OldTool  # type: ignore[import-not-found]
    from crab._contracts.tools import Tool
    from crab._loop.agent import Agent

    assert OldTool is Tool
    assert OldAgent is Agent


def test_a_module_under_an_old_package_path_is_not_loaded_twice() -> None:
    # `crab.loop` names the package crab._loop; without the finder first on sys.meta_path the
    # path finder would load crab/_loop/turn.py again as a second module `crab.loop.turn`.
    code = (
        "import warnings; warnings.simplefilter('ignore');"
        "import crab.loop.turn as old, crab._loop.turn as new; print(old is new)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "True"


def test_an_unknown_crab_module_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("crab.no_such_module")
