"""Test kit for crab and for third-party plugins: scripted provider, harnesses, contract suites.

``ScriptedProvider`` replays replies; ``AgentHarness`` runs an agent on it with the plugins you
choose; ``run_cli`` runs ``crab`` in-process; ``StoreContract`` is the suite every store passes;
``ReplayServer`` (``crab.testing.http_replay``) is a real HTTP server on 127.0.0.1 replaying
recorded responses to a provider plugin under test. For the real ``crab`` command in a subprocess,
``ScriptedSite`` installs a scripted provider plugin, and ``TmuxScreen`` runs ``crab chat`` in tmux.
The pytest fixtures live in ``crab.testing.pytest_plugin`` (loaded automatically).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crab._config.layers import load_config
    from crab._config.trust import trust as trust_project
    from crab._host.api_version import check_range
    from crab._secrets.keys import save_key
    from crab.testing.harness import AgentHarness, CliResult, build_host, make_config, run_cli
    from crab.testing.http_replay import (
        CRAB,
        HttpReply,
        RecordedRequest,
        ReplayServer,
        collect_stream,
        find_secret,
        run_crab,
        sse_bytes,
        sse_events,
    )
    from crab.testing.images import image_history, make_png
    from crab.testing.scripted import ScriptedProvider, load_script
    from crab.testing.site import ScriptedSite
    from crab.testing.store_contract import StoreContract, assert_chain
    from crab.testing.tmux import TmuxScreen, tmux_available

_EXPORTS = {
    "load_config": "crab._config.layers",
    "trust_project": "crab._config.trust:trust",
    "check_range": "crab._host.api_version",
    "save_key": "crab._secrets.keys",
    "CRAB": "crab.testing.http_replay",
    "assert_chain": "crab.testing.store_contract",
    "AgentHarness": "crab.testing.harness",
    "CliResult": "crab.testing.harness",
    "build_host": "crab.testing.harness",
    "make_config": "crab.testing.harness",
    "run_cli": "crab.testing.harness",
    "HttpReply": "crab.testing.http_replay",
    "RecordedRequest": "crab.testing.http_replay",
    "ReplayServer": "crab.testing.http_replay",
    "collect_stream": "crab.testing.http_replay",
    "find_secret": "crab.testing.http_replay",
    "run_crab": "crab.testing.http_replay",
    "sse_bytes": "crab.testing.http_replay",
    "sse_events": "crab.testing.http_replay",
    "make_png": "crab.testing.images",
    "image_history": "crab.testing.images",
    "ScriptedSite": "crab.testing.site",
    "TmuxScreen": "crab.testing.tmux",
    "tmux_available": "crab.testing.tmux",
    "process_alive": "crab.testing.processes",
    "ScriptedProvider": "crab.testing.scripted",
    "load_script": "crab.testing.scripted",
    "StoreContract": "crab.testing.store_contract",
}
__all__ = [
    "CRAB",
    "AgentHarness",
    "CliResult",
    "HttpReply",
    "RecordedRequest",
    "ReplayServer",
    "ScriptedProvider",
    "ScriptedSite",
    "StoreContract",
    "TmuxScreen",
    "assert_chain",
    "build_host",
    "check_range",
    "collect_stream",
    "find_secret",
    "image_history",
    "load_config",
    "load_script",
    "make_config",
    "make_png",
    "process_alive",
    "run_cli",
    "run_crab",
    "save_key",
    "sse_bytes",
    "sse_events",
    "tmux_available",
    "trust_project",
]


def __getattr__(name: str) -> Any:
    from crab import _lazy_export

    return _lazy_export(_EXPORTS, globals(), "crab.testing", name)
