"""Building hosts and agents from an explicit set of in-process plugins, and running the CLI in-process.

Agents are built by the same composition root as ``crab run`` and ``crab.Agent``
(``crab._assembly.root``), with no config file or environment layer and no installed plugin.

Third-party plugin authors use these through the pytest fixtures in ``crab.testing.pytest_plugin``
or directly: ``AgentHarness(replies=[...], plugins={"mine": my_plugin_module})``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crab._assembly.choosing import build_host as _build_host
from crab._assembly.root import Layers, assemble
from crab._builtin.memory_store import MemoryStore
from crab._config.layers import load_config
from crab._config.trust import trust
from crab._contracts.config import Config, TrustState
from crab._contracts.events import Event
from crab._contracts.handle import AgentHandle
from crab._contracts.images import ImagePart
from crab._contracts.interception import AskUser
from crab._contracts.providers import ModelRequest, Provider
from crab._contracts.questions import AskQuestion
from crab._contracts.storage import Store
from crab._host.plugin_host import PluginHost
from crab._loop.agent import Agent
from crab._loop.handle import LoopHandle
from crab._loop.session import Session, TurnOutcome
from crab.testing.scripted import Reply, ScriptedProvider


def make_config(data: Mapping[str, Any] | None = None, cwd: Path | None = None) -> Config:
    """A config from defaults plus ``data`` given as dotted keys (``{"crab.max_iterations": 5}``),
    and the project file under ``cwd`` when one is given: never the user's own ``~/.crab/config.toml``
    nor the environment, so a test sees the same config on every machine (``crab_config`` writes
    and loads a user file in a fresh ``$CRAB_HOME``)."""
    return load_config(cwd=cwd, overrides=dict(data or {}), env={}, user=False)


def build_host(
    plugins: Mapping[str, object] | None = None,
    config: Config | None = None,
    *,
    builtins: bool = True,
    validate: bool = False,
) -> PluginHost:
    """A plugin host with core's built-ins (unless ``builtins=False``) and exactly ``plugins``.

    With ``validate`` every declared config table is checked against ``config`` as a run checks
    it (defaults filled, an untrusted project's trust-only keys dropped into ``config.ignored``).
    """
    return _build_host(
        config or make_config(),
        [],
        objects=plugins,
        builtins=builtins,
        discover=False,
        validate=validate,
        strict=False,
    )


class AgentHarness:
    """An agent on a scripted provider and the memory store, with every event collected.

    ``run(text)`` drives one input to the end and returns its outcome; ``events`` holds all events
    so far; ``handle`` is an ``AgentHandle`` on the agent (a channel's ``run(handle)``). Call
    ``close()`` (the fixture does) to shut the agent down.
    """

    def __init__(
        self,
        replies: Sequence[Reply] | Callable[[ModelRequest], Reply] = (),
        *,
        plugins: Mapping[str, object] | None = None,
        config: Mapping[str, Any] | None = None,
        workspace: Path | None = None,
        store: Store | None = None,
        provider: Provider | None = None,
        ask: AskUser | None = None,
        local: bool = True,
        question: AskQuestion | None = None,
    ) -> None:
        self.workspace = workspace or Path.cwd()
        self.provider: Provider = provider or ScriptedProvider(replies)
        self.store = store or MemoryStore()
        # As a real run does, the root checks each declared [plugins.<name>] table and fills its
        # defaults, so a plugin's tools and commands read the same settings here as under `crab run`.
        built = assemble(
            workspace=self.workspace,
            layers=Layers(environment=False, settings=config, source="--set"),
            plugins=[],
            objects=plugins,
            store=self.store,
            provider=self.provider,
            model="scripted",
            check_model=False,
            ask=ask,
            question=question,
            local=local,
            strict=False,
        )
        self.config: Config = built.config
        self.host: PluginHost = built.host
        self.agent: Agent = built.agent
        self.events: list[Event] = []
        self.agent.subscribe(self.events.append)
        self.runner = asyncio.Runner()
        self.runner.run(self.agent.start())
        self.session: Session = self.runner.run(self.agent.new_session())

    @property
    def handle(self) -> AgentHandle:
        """A ``crab.AgentHandle`` on this agent, as a channel, command or lifecycle hook gets one."""
        return LoopHandle(self.agent)

    @property
    def requests(self) -> list[ModelRequest]:
        """What the scripted provider was sent (empty for other providers)."""
        return self.provider.requests if isinstance(self.provider, ScriptedProvider) else []

    def run(self, text: str, images: Sequence[ImagePart] = ()) -> TurnOutcome:
        return self.runner.run(self.agent.handle_input(self.session, text, images=images))

    def run_async(self, coro: Any) -> Any:
        """Run any coroutine on the harness's event loop (for tests that abort or steer)."""
        return self.runner.run(coro)

    def events_of(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def close(self) -> None:
        try:
            self.runner.run(self.agent.close())
        finally:
            self.runner.close()


@dataclass
class CliResult:
    """What an in-process ``crab`` run printed and returned."""

    exit_code: int
    stdout: str
    stderr: str = ""
    output_lines: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _env(overrides: Mapping[str, str | None]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in overrides}
    try:
        for key, value in overrides.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_cli(*args: str, env: Mapping[str, str | None] | None = None, stdin: str = "") -> CliResult:
    """Run ``crab ARGS`` in this process, capturing stdout and stderr (``env`` sets or, with None,
    removes variables for the call). In-process, so a test's monkeypatches apply to the command;
    the one module outside the CLI that imports it (``core/tests/test_import_graph.py``), inside
    this function: the test kit drives the CLI, nothing in core's runtime does."""
    import sys

    from crab._cli.app import run_app

    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with _env(env or {}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run_app(list(args))
    finally:
        sys.stdin = old_stdin
    return CliResult(code, out.getvalue(), err.getvalue(), out.getvalue().splitlines())


def trust_project(config_path: Path) -> TrustState:
    """Trust a project's ``.crab/config.toml`` as ``crab trust`` does (in the test's ``CRAB_HOME``)."""
    return trust(config_path)
