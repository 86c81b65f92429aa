"""Test kit for crab and for third-party plugins (the distribution crab-testing): scripted provider,
harnesses, contract suites.

``ScriptedProvider`` replays replies; ``AgentHarness`` runs an agent on it with the plugins you
choose; ``run_cli`` runs ``crab`` in-process; ``StoreContract`` is the suite every store passes;
``ReplayServer`` (``crab.testing.http_replay``) is a real HTTP server on 127.0.0.1 replaying
recorded responses to a provider plugin under test. For the real ``crab`` command in a subprocess,
``ScriptedSite`` installs a scripted provider plugin, and ``TmuxScreen`` runs ``crab chat`` in tmux.
The pytest fixtures live in ``crab.testing.pytest_plugin`` (registered by crab-testing's ``pytest11``
entry point). crab-testing is released with crab-core and may use its private modules.

Each name is written once, in the ``TYPE_CHECKING`` block, and imported on first use as ``crab``'s
are: crab-provider-mock replays scripts with ``ScriptedProvider`` in every ``crab run -m mock/…``,
which must not import pytest and the harnesses with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # crab.testing's public names: one import per module, each name re-exported as itself
    from crab._config.layers import load_config as load_config  # noqa: I001
    from crab._host.api_version import check_range as check_range
    from crab._secrets.keys import save_key as save_key
    from crab.testing.harness import AgentHarness as AgentHarness, CliResult as CliResult, run_cli as run_cli
    from crab.testing.harness import build_host as build_host, make_config as make_config
    from crab.testing.harness import trust_project as trust_project
    from crab.testing.http_replay import CRAB as CRAB, HttpReply as HttpReply, RecordedRequest as RecordedRequest
    from crab.testing.http_replay import ReplayServer as ReplayServer, collect_stream as collect_stream
    from crab.testing.http_replay import find_secret as find_secret, run_crab as run_crab
    from crab.testing.http_replay import sse_bytes as sse_bytes, sse_events as sse_events
    from crab.testing.images import image_history as image_history, make_png as make_png
    from crab.testing.processes import process_alive as process_alive
    from crab.testing.scripted import ScriptedProvider as ScriptedProvider, load_script as load_script
    from crab.testing.site import ScriptedSite as ScriptedSite
    from crab.testing.store_contract import StoreContract as StoreContract, assert_chain as assert_chain
    from crab.testing.tmux import TmuxScreen as TmuxScreen, tmux_available as tmux_available

_names: dict[str, str] = {}


if not TYPE_CHECKING:  # hidden from type checkers, for which a module __getattr__ makes every unknown name Any

    def __getattr__(name: str) -> Any:
        import crab

        if not _names:
            _names.update(crab._names_in(__file__))
        return crab._lazy(globals(), _names, name)

    def __dir__() -> list[str]:
        import crab

        return sorted({*globals(), *crab._names_in(__file__)})
