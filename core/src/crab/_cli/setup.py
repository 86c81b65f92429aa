"""Turning run/chat/serve options into the composition root's arguments (``crab._assembly.root``)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from crab._assembly.root import Assembly, Layers, PermissionMode, assemble
from crab._cli.errors import error_line
from crab._cli.options import RunOptions
from crab._config.layers import parse_value
from crab._contracts.errors import UsageError
from crab._contracts.interception import AskUser
from crab._contracts.questions import AskQuestion
from crab._loop.agent import Agent
from crab._loop.session import Session


def overrides_from(options: RunOptions) -> dict[str, Any]:
    """Config overrides (dotted keys) from ``--set`` flags."""
    overrides: dict[str, Any] = {}
    for item in options.settings:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set takes KEY=VALUE, got {item!r}")
        overrides[key.strip()] = parse_value(value.strip())
    return overrides


def permission_mode(options: RunOptions) -> PermissionMode | None:
    """``--yolo`` or ``--read-only`` (None: the config decides)."""
    if options.yolo and options.read_only:
        raise UsageError("--yolo and --read-only contradict each other; pick one")
    if options.yolo:
        return "yolo"
    return "read-only" if options.read_only else None


def prepare(
    options: RunOptions,
    *,
    ask: AskUser | None,
    question: AskQuestion | None = None,
    local: bool = True,
    objects: Mapping[str, object] | None = None,
) -> Assembly:
    """Config, plugins, provider, store and agent for a run; raises ``CrabError`` on bad setup.
    ``ask`` and ``question`` are how this run asks the user (None: nobody can answer); ``objects``
    are in-process plugins of the command's own (``crab run --output-schema``'s)."""
    return assemble(
        objects=objects,
        layers=Layers(settings=overrides_from(options), source="--set"),
        plugins=options.plugins,
        store=options.store,
        provider=options.provider,
        model=options.model,
        permissions=permission_mode(options),
        ask=ask,
        question=question,
        local=local,
        # No agent will start to show them, and they may be why setup failed.
        on_setup_notice=lambda line: sys.stderr.write(f"{error_line(f'warning: {line}')}\n"),
        remember_failures=True,  # for `crab plugins list`, which calls no hook
    )


async def open_session(agent: Agent, options: RunOptions) -> Session:
    """The session a run continues (``-r ID``, ``--session``, ``-c``) or a new one. A model given on
    the command line wins over the one a resumed session was switched to (``/model``)."""
    wanted = options.resume or options.session
    if options.resume and options.session and options.resume != options.session:
        raise UsageError("-r and --session name different sessions; give one")
    if wanted:
        from crab._assembly.choosing import require_session

        await require_session(agent.store, wanted)
        return await _flag_model_wins(agent, options, await agent.resume(wanted))
    if options.continue_latest:
        latest = await agent.latest_session()
        if latest is not None:
            return await _flag_model_wins(agent, options, latest)
        if agent.store.name == "memory":
            from crab._cli.sessions import MEMORY_EMPTY

            agent.notice(f"no earlier session to continue: {MEMORY_EMPTY}; starting a new one")
        else:
            agent.notice(f"no earlier session in this folder in the {agent.store.name} store; starting a new one")
    return await agent.new_session()


async def _flag_model_wins(agent: Agent, options: RunOptions, session: Session) -> Session:
    """A resumed session keeps the model ``/model`` switched it to, unless this run was given one:
    then it switches back to the run's, recorded like any switch (the next resume keeps it)."""
    if (options.model or options.provider) and session.model is not None:
        await agent.set_model(session, agent.default_model().name)
    return session
