"""crab: a small agent framework in which everything is a plugin.

``crab`` holds what a program or a plugin author needs (docs/api.md): the library's ``Agent`` (and
``RunContext``, ``OutputError``), the
tool types and ``@crab.tool``, the hook markers, the agent handle, the protocols a provider, store,
channel, renderer or command implements, config and settings, and the errors. The rest of the
public API lives in submodules that own their ``__all__``: ``crab.events``, ``crab.messages``,
``crab.storage``, ``crab.secrets``, ``crab.tools``, ``crab.hooks``, ``crab.config``,
``crab.rendering``, ``crab.steps`` and ``crab.processes``; tests use ``crab.testing`` (the
distribution crab-testing). Everything else under ``crab`` is private.

Each name is written once, in the ``TYPE_CHECKING`` block below: type checkers read it as it is,
and ``__getattr__`` reads the same lines to import a name on first use (PEP 562), since importing
them all would double what ``crab --help`` loads (docs/api.md#how-crab-imports-its-names).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from crab._version import __version__ as __version__

# crab-testing installs crab/testing into this same folder; installed editable, it sits in a ``crab``
# folder of its own elsewhere on sys.path, which this package's path must then name too (what
# pkgutil.extend_path does, without importing pkgutil at every start).
__path__ += [
    folder
    for folder in (os.path.join(entry, "crab") for entry in sys.path if isinstance(entry, str) and entry)
    if folder not in __path__ and os.path.isdir(os.path.join(folder, "testing"))
]

if TYPE_CHECKING:  # crab's public names: one import per module, each name re-exported as itself
    from crab._assembly.library import Agent as Agent, Run as Run  # noqa: I001
    from crab._assembly.output import OutputError as OutputError
    from crab._assembly.result import RunResult as RunResult, ToolCallRecord as ToolCallRecord
    from crab._contracts.config import Config as Config
    from crab._contracts.channels import Channel as Channel
    from crab._contracts.commands import Command as Command, CommandContext as CommandContext
    from crab._contracts.commands import CommandResult as CommandResult
    from crab._contracts.config import ConfigTable as ConfigTable, InvalidValue as InvalidValue
    from crab._contracts.config import Setting as Setting
    from crab._contracts.errors import ChannelError as ChannelError, ConfigError as ConfigError
    from crab._contracts.errors import ContextOverflowError as ContextOverflowError, CrabError as CrabError
    from crab._contracts.errors import PluginError as PluginError, ProviderError as ProviderError
    from crab._contracts.errors import StoreError as StoreError, ToolError as ToolError
    from crab._contracts.errors import UsageError as UsageError
    from crab._contracts.handle import AgentHandle as AgentHandle, ChildOutcome as ChildOutcome
    from crab._contracts.handle import PluginStatus as PluginStatus, SessionView as SessionView
    from crab._contracts.interception import Answer as Answer, PermissionRequest as PermissionRequest
    from crab._contracts.providers import ModelInfo as ModelInfo, ModelRequest as ModelRequest
    from crab._contracts.providers import Provider as Provider
    from crab._contracts.questions import AskQuestion as AskQuestion, Question as Question
    from crab._contracts.renderers import Renderer as Renderer
    from crab._contracts.run_context import RunContext as RunContext
    from crab._contracts.storage import Store as Store
    from crab._contracts.tools import Tool as Tool, ToolContext as ToolContext, ToolResult as ToolResult
    from crab._contracts.tools import ToolSpec as ToolSpec
    from crab._values.tool_decorator import tool as tool
    from crab._host.api_version import API_VERSION as API_VERSION
    from crab._host.declared import hookspec as hookspec
    from crab._host.hookspecs import hookimpl as hookimpl
    from crab import config as config, events as events, hooks as hooks, messages as messages  # submodules
    from crab import processes as processes, rendering as rendering, secrets as secrets, steps as steps
    from crab import storage as storage, tools as tools


def _names_in(file: str) -> dict[str, str]:
    """Public name → ``module:attribute``, read from the first ``if TYPE_CHECKING:`` block of ``file``
    (up to its first blank line), where each is imported ``as`` its public name (``X as X``, so type
    checkers re-export it); crab.testing reads its own so."""
    import re

    with open(file, encoding="utf-8") as source:
        block = source.read().partition("if TYPE_CHECKING:")[2].partition("\n\n")[0]
    found = re.findall(r"from (\S+) import (\([^)]*\)|.+)", block)
    return {
        name: f"{module}:{attribute}"
        for module, names in found
        for attribute, name in re.findall(r"(\w+) as (\w+)", names)
    }


def _lazy(namespace: dict[str, Any], names: dict[str, str], name: str) -> Any:
    """``namespace``'s attribute ``name`` imported on first use (PEP 562), or ``AttributeError``.

    A public submodule (``crab.events``) is one such name: ``import crab`` then reaches
    ``crab.events.TextDelta`` without importing every submodule at start-up. ``__all__`` lists
    the other names."""
    owner = namespace["__name__"]
    if name == "__all__":
        value: Any = sorted(
            [
                *(n for n, home in names.items() if home.partition(":")[0] != owner),
                *(["__version__"] if "__version__" in namespace else []),
            ]
        )
    elif name in names:
        import importlib

        module, _, attribute = names[name].partition(":")
        if module == owner:
            value = importlib.import_module(f"{owner}.{attribute}")
        else:
            value = getattr(importlib.import_module(module), attribute)
    else:
        raise AttributeError(f"module {owner!r} has no attribute {name!r} (docs/api.md lists {owner}'s names)")
    namespace[name] = value
    return value


_homes: dict[str, str] = {}


if not TYPE_CHECKING:  # hidden from type checkers, for which a module __getattr__ makes every unknown name Any

    def __getattr__(name: str) -> Any:
        if not _homes:
            _homes.update(_names_in(__file__))
        return _lazy(globals(), _homes, name)

    def __dir__() -> list[str]:
        if not _homes:
            _homes.update(_names_in(__file__))
        return sorted({*globals(), *_homes})
