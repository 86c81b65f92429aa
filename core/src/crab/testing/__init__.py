"""Test kit for crab and for third-party plugins: scripted provider, harnesses, contract suites.

``ScriptedProvider`` replays replies; ``AgentHarness`` runs an agent on it with the plugins you
choose; ``run_cli`` runs ``crab`` in-process; ``StoreContract`` is the suite every store passes.
The pytest fixtures live in ``crab.testing.pytest_plugin`` (loaded automatically).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crab.testing.harness import AgentHarness, CliResult, build_host, make_config, run_cli
    from crab.testing.scripted import ScriptedProvider, load_script
    from crab.testing.store_contract import StoreContract

_EXPORTS = {
    "AgentHarness": "crab.testing.harness",
    "CliResult": "crab.testing.harness",
    "build_host": "crab.testing.harness",
    "make_config": "crab.testing.harness",
    "run_cli": "crab.testing.harness",
    "ScriptedProvider": "crab.testing.scripted",
    "load_script": "crab.testing.scripted",
    "StoreContract": "crab.testing.store_contract",
}
__all__ = [
    "AgentHarness",
    "CliResult",
    "ScriptedProvider",
    "StoreContract",
    "build_host",
    "load_script",
    "make_config",
    "run_cli",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'crab.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
