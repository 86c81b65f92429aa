"""crab: a small agent framework in which everything is a plugin.

This module is the public surface for plugin authors and for programs that embed crab
(``crab.Agent``, docs/library.md), together with ``crab.processes`` (processes tools start) and
``crab.testing`` (the test kit). Every name in ``__all__`` is covered by ``API_VERSION`` and
listed in docs/api.md; every other module under ``crab`` is private and may change in any
release. What a family of plugins shares lives in kits, their own distributions
(``crab_provider_kit``, ``crab_sql_kit``, ``crab_jobs_kit``); the API 1.x names that moved there
still import through ``crab._compat``. Names are imported on first use (PEP 562) so ``import
crab`` stays cheap for the CLI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from crab import _compat
from crab._version import __version__

_compat.install()

if TYPE_CHECKING:
    from crab._assembly.library import Agent, Run
    from crab._assembly.result import RunResult, ToolCallRecord
    from crab._assembly.toolbox import ToolBox, open_toolbox
    from crab._config.layers import Config, PluginTable
    from crab._config.paths import crab_home
    from crab._contracts.channels import Channel
    from crab._contracts.commands import Command, CommandContext, CommandResult
    from crab._contracts.config_tables import ConfigTable, InvalidValue, Setting, validate_table
    from crab._contracts.errors import (
        ChannelError,
        ConfigError,
        ContextOverflowError,
        CrabError,
        PluginError,
        ProviderError,
        StoreError,
        ToolError,
        UsageError,
    )
    from crab._contracts.events import (
        CommandOutput,
        CompactionEvent,
        ErrorEvent,
        ErrorKind,
        Event,
        MessageEnd,
        NoticeEvent,
        RetryEvent,
        StreamEvent,
        TextDelta,
        ThinkingDelta,
        ToolCallEvent,
        ToolResultEvent,
        TurnEnded,
        TurnStarted,
        TurnStop,
        UsageEvent,
    )
    from crab._contracts.handle import AgentHandle, PluginStatus, SessionView
    from crab._contracts.interception import Allow, Answer, Decision, Deny, PermissionRequest, Replace
    from crab._contracts.messages import (
        AssistantMessage,
        Message,
        StopReason,
        Thinking,
        ToolCall,
        ToolResultMessage,
        Usage,
        UserMessage,
        json_text,
        message_from_dict,
        message_to_dict,
        parse_tool_arguments,
        unique_id,
        usage_from_dict,
        usage_to_dict,
    )
    from crab._contracts.providers import ModelInfo, ModelRequest, Provider
    from crab._contracts.renderers import ChatEntry, ChatInput, ChatState, Renderer, RendererSpec, RenderTarget
    from crab._contracts.storage import (
        ENTRY_TYPES,
        INTERCHANGE_VERSION,
        SESSION_HEADER_KEY,
        Entry,
        EntryType,
        SearchHit,
        SessionImporter,
        SessionInfo,
        Store,
        entry_from_dict,
        entry_text,
        entry_to_dict,
        new_entry_id,
        new_session_id,
        search_hit,
        session_from_header,
        session_header,
    )
    from crab._contracts.tools import Tool, ToolContext, ToolResult, ToolSpec, tool
    from crab._contracts.truncate import OutputLimit, Truncation
    from crab._contracts.truncate import describe as describe_truncation
    from crab._contracts.truncate import truncate as truncate_output
    from crab._host.api_version import API_VERSION
    from crab._host.declared import hookspec
    from crab._host.hookspecs import hookimpl
    from crab._loop.pricing import usage_cost, with_cost
    from crab._secrets.keys import REDACTED, dsn_password, known_secrets, lookup_key, missing_key_message
    from crab._secrets.redaction import Redactor
    from crab._system.atomic import write_atomic

_EXPORTS: dict[str, str] = {
    # version
    "API_VERSION": "crab._host.api_version",
    # crab as a library (docs/library.md)
    "Agent": "crab._assembly.library",
    "Run": "crab._assembly.library",
    "RunResult": "crab._assembly.result",
    "ToolCallRecord": "crab._assembly.result",
    # hooks
    "hookimpl": "crab._host.hookspecs",
    "hookspec": "crab._host.declared",
    # tools
    "tool": "crab._contracts.tools",
    "Tool": "crab._contracts.tools",
    "ToolContext": "crab._contracts.tools",
    "ToolResult": "crab._contracts.tools",
    "ToolSpec": "crab._contracts.tools",
    "OutputLimit": "crab._contracts.truncate",
    "Truncation": "crab._contracts.truncate",
    "truncate_output": "crab._contracts.truncate:truncate",
    "describe_truncation": "crab._contracts.truncate:describe",
    "write_atomic": "crab._system.atomic",
    "ToolBox": "crab._assembly.toolbox",
    "open_toolbox": "crab._assembly.toolbox",
    # secrets
    "Redactor": "crab._secrets.redaction",
    "known_secrets": "crab._secrets.keys",
    "REDACTED": "crab._secrets.keys",
    "dsn_password": "crab._secrets.keys",
    "lookup_key": "crab._secrets.keys",
    "missing_key_message": "crab._secrets.keys",
    # commands and channels
    "Command": "crab._contracts.commands",
    "CommandContext": "crab._contracts.commands",
    "CommandResult": "crab._contracts.commands",
    "Channel": "crab._contracts.channels",
    "ChannelError": "crab._contracts.errors",
    "AgentHandle": "crab._contracts.handle",
    "SessionView": "crab._contracts.handle",
    "PluginStatus": "crab._contracts.handle",
    "collect_hook": "crab._assembly.collect_hook",
    "HookResults": "crab._assembly.collect_hook",
    # config
    "Config": "crab._config.layers",
    "PluginTable": "crab._config.layers",
    "crab_home": "crab._config.paths",
    "ConfigTable": "crab._contracts.config_tables",
    "InvalidValue": "crab._contracts.config_tables",
    "Setting": "crab._contracts.config_tables",
    "validate_table": "crab._contracts.config_tables",
    # errors
    "ConfigError": "crab._contracts.errors",
    "ContextOverflowError": "crab._contracts.errors",
    "CrabError": "crab._contracts.errors",
    "PluginError": "crab._contracts.errors",
    "ProviderError": "crab._contracts.errors",
    "StoreError": "crab._contracts.errors",
    "ToolError": "crab._contracts.errors",
    "UsageError": "crab._contracts.errors",
    # events
    "CommandOutput": "crab._contracts.events",
    "CompactionEvent": "crab._contracts.events",
    "ErrorEvent": "crab._contracts.events",
    "ErrorKind": "crab._contracts.events",
    "Event": "crab._contracts.events",
    "MessageEnd": "crab._contracts.events",
    "NoticeEvent": "crab._contracts.events",
    "RetryEvent": "crab._contracts.events",
    "StreamEvent": "crab._contracts.events",
    "TextDelta": "crab._contracts.events",
    "ThinkingDelta": "crab._contracts.events",
    "ToolCallEvent": "crab._contracts.events",
    "ToolResultEvent": "crab._contracts.events",
    "TurnEnded": "crab._contracts.events",
    "TurnStarted": "crab._contracts.events",
    "TurnStop": "crab._contracts.events",
    "UsageEvent": "crab._contracts.events",
    # interception
    "Allow": "crab._contracts.interception",
    "Deny": "crab._contracts.interception",
    "Replace": "crab._contracts.interception",
    "PermissionRequest": "crab._contracts.interception",
    "Decision": "crab._contracts.interception",
    # messages
    "AssistantMessage": "crab._contracts.messages",
    "Message": "crab._contracts.messages",
    "StopReason": "crab._contracts.messages",
    "Thinking": "crab._contracts.messages",
    "ToolCall": "crab._contracts.messages",
    "ToolResultMessage": "crab._contracts.messages",
    "Usage": "crab._contracts.messages",
    "UserMessage": "crab._contracts.messages",
    "usage_from_dict": "crab._contracts.messages",
    "usage_to_dict": "crab._contracts.messages",
    "message_from_dict": "crab._contracts.messages",
    "message_to_dict": "crab._contracts.messages",
    "json_text": "crab._contracts.messages",
    "parse_tool_arguments": "crab._contracts.messages",
    "unique_id": "crab._contracts.messages",
    # providers
    "ModelInfo": "crab._contracts.providers",
    "ModelRequest": "crab._contracts.providers",
    "Provider": "crab._contracts.providers",
    "usage_cost": "crab._loop.pricing",
    "with_cost": "crab._loop.pricing",
    # renderers
    "Renderer": "crab._contracts.renderers",
    "RendererSpec": "crab._contracts.renderers",
    "RenderTarget": "crab._contracts.renderers",
    "ChatEntry": "crab._contracts.renderers",
    "ChatInput": "crab._contracts.renderers",
    "ChatState": "crab._contracts.renderers",
    "Answer": "crab._contracts.interception",
    # stores
    "ENTRY_TYPES": "crab._contracts.storage",
    "INTERCHANGE_VERSION": "crab._contracts.storage",
    "SESSION_HEADER_KEY": "crab._contracts.storage",
    "Entry": "crab._contracts.storage",
    "EntryType": "crab._contracts.storage",
    "SearchHit": "crab._contracts.storage",
    "SessionInfo": "crab._contracts.storage",
    "Store": "crab._contracts.storage",
    "SessionImporter": "crab._contracts.storage",
    "entry_from_dict": "crab._contracts.storage",
    "entry_text": "crab._contracts.storage",
    "entry_to_dict": "crab._contracts.storage",
    "new_entry_id": "crab._contracts.storage",
    "new_session_id": "crab._contracts.storage",
    "session_from_header": "crab._contracts.storage",
    "session_header": "crab._contracts.storage",
    "search_hit": "crab._contracts.storage",
}
"""Public name → ``module`` (same name there) or ``module:attribute``."""

__all__ = [
    "API_VERSION",
    "ENTRY_TYPES",
    "INTERCHANGE_VERSION",
    "REDACTED",
    "SESSION_HEADER_KEY",
    "Agent",
    "AgentHandle",
    "Allow",
    "Answer",
    "AssistantMessage",
    "Channel",
    "ChannelError",
    "ChatEntry",
    "ChatInput",
    "ChatState",
    "Command",
    "CommandContext",
    "CommandOutput",
    "CommandResult",
    "CompactionEvent",
    "Config",
    "ConfigError",
    "ConfigTable",
    "ContextOverflowError",
    "CrabError",
    "Decision",
    "Deny",
    "Entry",
    "EntryType",
    "ErrorEvent",
    "ErrorKind",
    "Event",
    "HookResults",
    "InvalidValue",
    "Message",
    "MessageEnd",
    "ModelInfo",
    "ModelRequest",
    "NoticeEvent",
    "OutputLimit",
    "PermissionRequest",
    "PluginError",
    "PluginStatus",
    "PluginTable",
    "Provider",
    "ProviderError",
    "Redactor",
    "RenderTarget",
    "Renderer",
    "RendererSpec",
    "Replace",
    "RetryEvent",
    "Run",
    "RunResult",
    "SearchHit",
    "SessionImporter",
    "SessionInfo",
    "SessionView",
    "Setting",
    "StopReason",
    "Store",
    "StoreError",
    "StreamEvent",
    "TextDelta",
    "Thinking",
    "ThinkingDelta",
    "Tool",
    "ToolBox",
    "ToolCall",
    "ToolCallEvent",
    "ToolCallRecord",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolResultEvent",
    "ToolResultMessage",
    "ToolSpec",
    "Truncation",
    "TurnEnded",
    "TurnStarted",
    "TurnStop",
    "Usage",
    "UsageError",
    "UsageEvent",
    "UserMessage",
    "__version__",
    "collect_hook",
    "crab_home",
    "describe_truncation",
    "dsn_password",
    "entry_from_dict",
    "entry_text",
    "entry_to_dict",
    "hookimpl",
    "hookspec",
    "json_text",
    "known_secrets",
    "lookup_key",
    "message_from_dict",
    "message_to_dict",
    "missing_key_message",
    "new_entry_id",
    "new_session_id",
    "open_toolbox",
    "parse_tool_arguments",
    "search_hit",
    "session_from_header",
    "session_header",
    "tool",
    "truncate_output",
    "unique_id",
    "usage_cost",
    "usage_from_dict",
    "usage_to_dict",
    "validate_table",
    "with_cost",
    "write_atomic",
]


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
