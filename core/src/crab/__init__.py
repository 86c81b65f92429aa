"""crab: a small agent framework in which everything is a plugin.

This module is the public surface for plugin authors, together with ``crab.provider_kit``
(streamed HTTP, SSE, retries, pricing and keys for model providers) and ``crab.testing`` (the test
kit). Every name in ``__all__`` is covered by ``API_VERSION`` and listed in docs/api.md; every
other module under ``crab`` is private and may change in any release. Names are imported on first
use (PEP 562) so ``import crab`` stays cheap for the CLI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from crab._version import __version__

if TYPE_CHECKING:
    from crab.apiversion import API_VERSION
    from crab.atomic import write_atomic
    from crab.auth import REDACTED, dsn_password, known_secrets
    from crab.channel_host import ChannelError
    from crab.channels import Channel
    from crab.commands import Command, CommandContext, CommandResult
    from crab.config import Config, PluginTable, crab_home
    from crab.config_tables import ConfigTable, InvalidValue, Setting, validate_table
    from crab.environ import postgres_dsn
    from crab.errors import (
        ConfigError,
        ContextOverflowError,
        CrabError,
        PluginError,
        ProviderError,
        StoreError,
        ToolError,
        UsageError,
    )
    from crab.events import (
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
    from crab.handles import AgentHandle, PluginStatus, SessionView
    from crab.hookspecs import hookimpl
    from crab.interception import Allow, Answer, Decision, Deny, PermissionRequest, Replace
    from crab.messages import (
        AssistantMessage,
        Message,
        StopReason,
        Thinking,
        ToolCall,
        ToolResultMessage,
        Usage,
        UserMessage,
        message_from_dict,
        message_to_dict,
        usage_from_dict,
        usage_to_dict,
    )
    from crab.providers import ModelInfo, ModelRequest, Provider
    from crab.redaction import Redactor
    from crab.render import ChatEntry, ChatInput, ChatState, Renderer, RendererSpec, RenderTarget
    from crab.storage import (
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
        session_from_header,
        session_header,
    )
    from crab.store_rows import (
        SESSION_COLUMNS,
        SessionTotals,
        StoredPayload,
        decode_payload,
        entry_from_row,
        entry_usage,
        payload_json,
        search_hit,
        session_from_row,
        session_totals,
        store_payload,
        utf8_encodable,
    )
    from crab.toolbox import ToolBox, open_toolbox
    from crab.tools import Tool, ToolContext, ToolResult, ToolSpec, tool
    from crab.truncate import OutputLimit, Truncation
    from crab.truncate import describe as describe_truncation
    from crab.truncate import truncate as truncate_output

_EXPORTS: dict[str, str] = {
    # version
    "API_VERSION": "crab.apiversion",
    # hooks
    "hookimpl": "crab.hookspecs",
    # tools
    "tool": "crab.tools",
    "Tool": "crab.tools",
    "ToolContext": "crab.tools",
    "ToolResult": "crab.tools",
    "ToolSpec": "crab.tools",
    "OutputLimit": "crab.truncate",
    "Truncation": "crab.truncate",
    "truncate_output": "crab.truncate:truncate",
    "describe_truncation": "crab.truncate:describe",
    "write_atomic": "crab.atomic",
    "ToolBox": "crab.toolbox",
    "open_toolbox": "crab.toolbox",
    # secrets
    "Redactor": "crab.redaction",
    "known_secrets": "crab.auth",
    "REDACTED": "crab.auth",
    "dsn_password": "crab.auth",
    "postgres_dsn": "crab.environ",
    # commands and channels
    "Command": "crab.commands",
    "CommandContext": "crab.commands",
    "CommandResult": "crab.commands",
    "Channel": "crab.channels",
    "ChannelError": "crab.channel_host",
    "AgentHandle": "crab.handles",
    "SessionView": "crab.handles",
    "PluginStatus": "crab.handles",
    "collect_hook": "crab.hook_calls",
    "HookResults": "crab.hook_calls",
    # config
    "Config": "crab.config",
    "PluginTable": "crab.config",
    "crab_home": "crab.config",
    "ConfigTable": "crab.config_tables",
    "InvalidValue": "crab.config_tables",
    "Setting": "crab.config_tables",
    "validate_table": "crab.config_tables",
    # errors
    "ConfigError": "crab.errors",
    "ContextOverflowError": "crab.errors",
    "CrabError": "crab.errors",
    "PluginError": "crab.errors",
    "ProviderError": "crab.errors",
    "StoreError": "crab.errors",
    "ToolError": "crab.errors",
    "UsageError": "crab.errors",
    # events
    "CommandOutput": "crab.events",
    "CompactionEvent": "crab.events",
    "ErrorEvent": "crab.events",
    "ErrorKind": "crab.events",
    "Event": "crab.events",
    "MessageEnd": "crab.events",
    "NoticeEvent": "crab.events",
    "RetryEvent": "crab.events",
    "StreamEvent": "crab.events",
    "TextDelta": "crab.events",
    "ThinkingDelta": "crab.events",
    "ToolCallEvent": "crab.events",
    "ToolResultEvent": "crab.events",
    "TurnEnded": "crab.events",
    "TurnStarted": "crab.events",
    "TurnStop": "crab.events",
    "UsageEvent": "crab.events",
    # interception
    "Allow": "crab.interception",
    "Deny": "crab.interception",
    "Replace": "crab.interception",
    "PermissionRequest": "crab.interception",
    "Decision": "crab.interception",
    # messages
    "AssistantMessage": "crab.messages",
    "Message": "crab.messages",
    "StopReason": "crab.messages",
    "Thinking": "crab.messages",
    "ToolCall": "crab.messages",
    "ToolResultMessage": "crab.messages",
    "Usage": "crab.messages",
    "UserMessage": "crab.messages",
    "usage_from_dict": "crab.messages",
    "usage_to_dict": "crab.messages",
    "message_from_dict": "crab.messages",
    "message_to_dict": "crab.messages",
    # providers
    "ModelInfo": "crab.providers",
    "ModelRequest": "crab.providers",
    "Provider": "crab.providers",
    # renderers
    "Renderer": "crab.render",
    "RendererSpec": "crab.render",
    "RenderTarget": "crab.render",
    "ChatEntry": "crab.render",
    "ChatInput": "crab.render",
    "ChatState": "crab.render",
    "Answer": "crab.interception",
    # stores
    "ENTRY_TYPES": "crab.storage",
    "INTERCHANGE_VERSION": "crab.storage",
    "SESSION_HEADER_KEY": "crab.storage",
    "Entry": "crab.storage",
    "EntryType": "crab.storage",
    "SearchHit": "crab.storage",
    "SessionInfo": "crab.storage",
    "Store": "crab.storage",
    "SessionImporter": "crab.storage",
    "entry_from_dict": "crab.storage",
    "entry_text": "crab.storage",
    "entry_to_dict": "crab.storage",
    "new_entry_id": "crab.storage",
    "new_session_id": "crab.storage",
    "session_from_header": "crab.storage",
    "session_header": "crab.storage",
    "SESSION_COLUMNS": "crab.store_rows",
    "StoredPayload": "crab.store_rows",
    "decode_payload": "crab.store_rows",
    "entry_from_row": "crab.store_rows",
    "entry_usage": "crab.store_rows",
    "payload_json": "crab.store_rows",
    "search_hit": "crab.store_rows",
    "session_from_row": "crab.store_rows",
    "session_totals": "crab.store_rows",
    "SessionTotals": "crab.store_rows",
    "store_payload": "crab.store_rows",
    "utf8_encodable": "crab.store_rows",
}
"""Public name → ``module`` (same name there) or ``module:attribute``."""

__all__ = [
    "API_VERSION",
    "ENTRY_TYPES",
    "INTERCHANGE_VERSION",
    "REDACTED",
    "SESSION_COLUMNS",
    "SESSION_HEADER_KEY",
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
    "SearchHit",
    "SessionImporter",
    "SessionInfo",
    "SessionTotals",
    "SessionView",
    "Setting",
    "StopReason",
    "Store",
    "StoreError",
    "StoredPayload",
    "StreamEvent",
    "TextDelta",
    "Thinking",
    "ThinkingDelta",
    "Tool",
    "ToolBox",
    "ToolCall",
    "ToolCallEvent",
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
    "decode_payload",
    "describe_truncation",
    "dsn_password",
    "entry_from_dict",
    "entry_from_row",
    "entry_text",
    "entry_to_dict",
    "entry_usage",
    "hookimpl",
    "known_secrets",
    "message_from_dict",
    "message_to_dict",
    "new_entry_id",
    "new_session_id",
    "open_toolbox",
    "payload_json",
    "postgres_dsn",
    "search_hit",
    "session_from_header",
    "session_from_row",
    "session_header",
    "session_totals",
    "store_payload",
    "tool",
    "truncate_output",
    "usage_from_dict",
    "usage_to_dict",
    "utf8_encodable",
    "validate_table",
    "write_atomic",
]


def _lazy_export(exports: dict[str, str], namespace: dict[str, Any], owner: str, name: str) -> Any:
    """Import public ``name`` of module ``owner`` on first use (PEP 562), and keep it in ``namespace``.

    ``exports`` maps public names to ``module`` (same name there) or ``module:attribute``; shared by
    ``crab``, ``crab.provider_kit`` and ``crab.testing``. Not itself part of the public API.
    """
    target = exports.get(name)
    if target is None:
        raise AttributeError(f"module {owner!r} has no attribute {name!r}")
    module, _, attribute = target.partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    namespace[name] = value
    return value


def __getattr__(name: str) -> Any:
    return _lazy_export(_EXPORTS, globals(), "crab", name)


def __dir__() -> list[str]:
    return sorted(__all__)
