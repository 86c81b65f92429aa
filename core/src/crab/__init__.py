"""crab: a small agent framework in which everything is a plugin. The public surface (with
``crab.processes`` and ``crab.testing``): every name in ``__all__`` is covered by ``API_VERSION``,
listed in docs/api.md, and imported on first use (PEP 562) so ``import crab`` stays cheap."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from crab import _compat
from crab._version import __version__

_compat.install()

# The same names for type checkers, as explicit re-exports (``X as X``), one import per module (so not
# as isort would split them).
if TYPE_CHECKING:
    from crab._assembly.collect_hook import HookResults as HookResults, collect_hook as collect_hook  # noqa: I001
    from crab._assembly.library import Agent as Agent, Run as Run
    from crab._assembly.result import RunResult as RunResult, ToolCallRecord as ToolCallRecord
    from crab._assembly.output import OutputError as OutputError
    from crab._assembly.limits import UsageLimitExceeded as UsageLimitExceeded, UsageLimits as UsageLimits
    from crab._assembly.history import (
        HistoryAnchor as HistoryAnchor,
        HistoryItem as HistoryItem,
        messages_from_json as messages_from_json,
        messages_to_json as messages_to_json,
    )
    from crab._contracts.run_context import RunContext as RunContext
    from crab._assembly.toolbox import ToolBox as ToolBox, open_toolbox as open_toolbox
    from crab._config.layers import Config as Config, PluginTable as PluginTable
    from crab._config.paths import crab_home as crab_home
    from crab._contracts.channels import Channel as Channel
    from crab._contracts.commands import (
        Command as Command,
        CommandContext as CommandContext,
        CommandResult as CommandResult,
    )
    from crab._contracts.config_tables import (
        ConfigTable as ConfigTable,
        InvalidValue as InvalidValue,
        Setting as Setting,
        validate_table as validate_table,
    )
    from crab._contracts.errors import (
        ChannelError as ChannelError,
        ConfigError as ConfigError,
        ContextOverflowError as ContextOverflowError,
        CrabError as CrabError,
        PluginError as PluginError,
        ProviderError as ProviderError,
        StoreError as StoreError,
        ToolError as ToolError,
        UsageError as UsageError,
    )
    from crab._contracts.events import (
        ChildEvent as ChildEvent,
        CommandOutput as CommandOutput,
        CompactionEvent as CompactionEvent,
        ErrorEvent as ErrorEvent,
        ErrorKind as ErrorKind,
        Event as Event,
        FileDiff as FileDiff,
        MessageEnd as MessageEnd,
        ModelCallEvent as ModelCallEvent,
        NoticeEvent as NoticeEvent,
        PlanEvent as PlanEvent,
        PlanItem as PlanItem,
        PlanStatus as PlanStatus,
        RetryEvent as RetryEvent,
        StreamEvent as StreamEvent,
        TextDelta as TextDelta,
        ThinkingDelta as ThinkingDelta,
        ToolCallEvent as ToolCallEvent,
        ToolResultEvent as ToolResultEvent,
        TurnEnded as TurnEnded,
        TurnStarted as TurnStarted,
        TurnStop as TurnStop,
        UsageEvent as UsageEvent,
    )
    from crab._values.event_json import event_to_dict as event_to_dict
    from crab._contracts.images import (
        IMAGE_TYPES as IMAGE_TYPES,
        ImagePart as ImagePart,
        ImageTooLarge as ImageTooLarge,
        sniff_image as sniff_image,
    )
    from crab._contracts.handle import (
        AgentHandle as AgentHandle,
        ChildOutcome as ChildOutcome,
        PluginStatus as PluginStatus,
        SessionView as SessionView,
    )
    from crab._contracts.interception import (
        Allow as Allow,
        Answer as Answer,
        Decision as Decision,
        Deny as Deny,
        PermissionRequest as PermissionRequest,
        Replace as Replace,
    )
    from crab._contracts.messages import (
        AssistantMessage as AssistantMessage,
        Message as Message,
        StopReason as StopReason,
        Thinking as Thinking,
        ToolCall as ToolCall,
        ToolResultMessage as ToolResultMessage,
        Usage as Usage,
        UserMessage as UserMessage,
    )
    from crab._values.message_json import (
        message_from_dict as message_from_dict,
        message_to_dict as message_to_dict,
        parse_tool_arguments as parse_tool_arguments,
        unique_id as unique_id,
        usage_from_dict as usage_from_dict,
        usage_to_dict as usage_to_dict,
    )
    from crab._values.utf8 import json_text as json_text
    from crab._contracts.providers import ModelInfo as ModelInfo, ModelRequest as ModelRequest, Provider as Provider
    from crab._contracts.questions import AskQuestion as AskQuestion, Question as Question
    from crab._contracts.renderers import (
        ChatEntry as ChatEntry,
        ChatInput as ChatInput,
        ChatState as ChatState,
        Renderer as Renderer,
        RendererSpec as RendererSpec,
        RenderTarget as RenderTarget,
    )
    from crab._contracts.storage import (
        ENTRY_TYPES as ENTRY_TYPES,
        INTERCHANGE_VERSION as INTERCHANGE_VERSION,
        SESSION_HEADER_KEY as SESSION_HEADER_KEY,
        BlobStore as BlobStore,
        Entry as Entry,
        EntryType as EntryType,
        SearchHit as SearchHit,
        SessionImporter as SessionImporter,
        SessionInfo as SessionInfo,
        Store as Store,
    )
    from crab._values.entries import (
        entry_from_dict as entry_from_dict,
        entry_text as entry_text,
        entry_to_dict as entry_to_dict,
        new_entry_id as new_entry_id,
        new_session_id as new_session_id,
        search_hit as search_hit,
        session_from_header as session_from_header,
        session_header as session_header,
    )
    from crab._contracts.tools import (
        Tool as Tool,
        ToolContext as ToolContext,
        ToolResult as ToolResult,
        ToolSpec as ToolSpec,
    )
    from crab._contracts.truncate import OutputLimit as OutputLimit, Truncation as Truncation
    from crab._host.api_version import API_VERSION as API_VERSION
    from crab._host.declared import hookspec as hookspec
    from crab._host.hookspecs import hookimpl as hookimpl
    from crab._loop.pricing import usage_cost as usage_cost, with_cost as with_cost
    from crab._loop.tool_exec import preview_diffs as preview_diffs, run_tool as run_tool
    from crab._secrets.keys import (
        REDACTED as REDACTED,
        dsn_password as dsn_password,
        known_secrets as known_secrets,
        lookup_key as lookup_key,
        missing_key_message as missing_key_message,
    )
    from crab._secrets.redaction import Redactor as Redactor
    from crab._system.atomic import write_atomic as write_atomic
    from crab._values.tool_decorator import tool as tool
    from crab._values.truncate import describe as describe_truncation
    from crab._values.truncate import truncate as truncate_output

_HOMES: dict[str, str] = {
    "crab._assembly.collect_hook": "collect_hook HookResults",
    "crab._assembly.library": "Agent Run",
    "crab._assembly.result": "RunResult ToolCallRecord",
    # issue 42 (library): typed results, history as data, deps, limits
    "crab._assembly.output": "OutputError",
    "crab._assembly.limits": "UsageLimitExceeded UsageLimits",
    "crab._assembly.history": "HistoryAnchor HistoryItem messages_from_json messages_to_json",
    "crab._contracts.run_context": "RunContext",
    "crab._assembly.toolbox": "open_toolbox ToolBox",
    "crab._config.layers": "Config PluginTable",
    "crab._config.paths": "crab_home",
    "crab._contracts.channels": "Channel",
    "crab._contracts.commands": "Command CommandContext CommandResult",
    "crab._contracts.config_tables": "ConfigTable InvalidValue Setting validate_table",
    "crab._contracts.errors": (
        "ChannelError ConfigError ContextOverflowError CrabError PluginError ProviderError StoreError ToolError"
        " UsageError"
    ),
    "crab._contracts.events": (
        "ChildEvent CommandOutput CompactionEvent ErrorEvent ErrorKind Event FileDiff MessageEnd"
        " ModelCallEvent NoticeEvent PlanEvent PlanItem PlanStatus RetryEvent StreamEvent TextDelta"
        " ThinkingDelta ToolCallEvent ToolResultEvent TurnEnded TurnStarted TurnStop UsageEvent"
    ),
    "crab._contracts.handle": "AgentHandle ChildOutcome PluginStatus SessionView",
    "crab._contracts.images": "IMAGE_TYPES ImagePart ImageTooLarge sniff_image",
    "crab._contracts.interception": "Allow Answer Decision Deny PermissionRequest Replace",
    "crab._contracts.messages": (
        "AssistantMessage Message StopReason Thinking ToolCall ToolResultMessage Usage UserMessage"
    ),
    "crab._contracts.providers": "ModelInfo ModelRequest Provider",
    "crab._contracts.questions": "AskQuestion Question",
    "crab._contracts.renderers": "ChatEntry ChatInput ChatState Renderer RendererSpec RenderTarget",
    "crab._contracts.storage": (
        "BlobStore Entry ENTRY_TYPES EntryType INTERCHANGE_VERSION SearchHit SESSION_HEADER_KEY"
        " SessionImporter SessionInfo Store"
    ),
    "crab._contracts.tools": "Tool ToolContext ToolResult ToolSpec",
    "crab._contracts.truncate": "OutputLimit Truncation",
    "crab._host.api_version": "API_VERSION",
    "crab._host.declared": "hookspec",
    "crab._host.hookspecs": "hookimpl",
    "crab._loop.pricing": "usage_cost with_cost",
    "crab._loop.tool_exec": "preview_diffs run_tool",
    "crab._secrets.keys": "dsn_password known_secrets lookup_key missing_key_message REDACTED",
    "crab._secrets.redaction": "Redactor",
    "crab._system.atomic": "write_atomic",
    "crab._values.tool_decorator": "tool",
    "crab._values.entries": (
        "entry_from_dict entry_text entry_to_dict new_entry_id new_session_id search_hit session_from_header"
        " session_header"
    ),
    "crab._values.event_json": "event_to_dict",
    "crab._values.message_json": (
        "message_from_dict message_to_dict parse_tool_arguments unique_id usage_from_dict usage_to_dict"
    ),
    "crab._values.utf8": "json_text",
}
"""Each module behind ``crab`` → the public names it holds, by the same name."""

_EXPORTS: dict[str, str] = {name: module for module, names in _HOMES.items() for name in names.split()}
_EXPORTS["truncate_output"] = "crab._values.truncate:truncate"
_EXPORTS["describe_truncation"] = "crab._values.truncate:describe"
"""Public name → ``module`` (same name there) or ``module:attribute``."""

# Type checkers read the ``X as X`` imports above, and this literal for the two imported under other names.
__all__ = ["__version__", "describe_truncation", "truncate_output"]
__all__ += [name for name in _EXPORTS if name not in __all__]


def _lazy_export(exports: dict[str, str], namespace: dict[str, Any], owner: str, name: str) -> Any:
    """Import public ``name`` of module ``owner`` on first use (PEP 562), and keep it in ``namespace``.

    ``exports`` maps public names to ``module`` (same name there) or ``module:attribute``; shared by
    ``crab`` and ``crab.testing``. Not itself part of the public API.
    """
    target = exports.get(name)
    if target is None:
        raise AttributeError(f"module {owner!r} has no attribute {name!r}")
    module, _, attribute = target.partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    namespace[name] = value
    return value


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:  # an API 1.x name that moved to a kit (a DeprecationWarning), or none
        return _compat.moved_name(name, globals())
    return _lazy_export(_EXPORTS, globals(), "crab", name)


def __dir__() -> list[str]:
    return sorted(__all__)
