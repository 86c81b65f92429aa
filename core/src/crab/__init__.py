"""crab: a small agent framework in which everything is a plugin.

The public surface for plugin authors: ``hookimpl``, ``tool``/``Tool``, the message and event
types, the provider and store protocols, decisions for interception hooks, and errors.
Names are imported on first use (PEP 562) so ``import crab`` stays cheap for the CLI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from crab._version import __version__

if TYPE_CHECKING:
    from crab.apiversion import API_VERSION
    from crab.commands import Command, CommandContext, CommandResult
    from crab.config import Config
    from crab.config_tables import ConfigTable, InvalidValue, Setting
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
        ErrorEvent,
        Event,
        MessageEnd,
        NoticeEvent,
        RetryEvent,
        TextDelta,
        ThinkingDelta,
        ToolCallEvent,
        ToolResultEvent,
        TurnEnded,
        TurnStarted,
        UsageEvent,
    )
    from crab.hookspecs import hookimpl
    from crab.interception import Allow, Deny, Replace
    from crab.messages import AssistantMessage, Message, Thinking, ToolCall, ToolResultMessage, Usage, UserMessage
    from crab.providers import ModelInfo, ModelRequest, Provider
    from crab.render import Renderer, RendererSpec, RenderTarget
    from crab.storage import Entry, SessionInfo, Store
    from crab.tools import Tool, ToolContext, ToolResult, ToolSpec, tool
    from crab.truncate import OutputLimit

_EXPORTS: dict[str, str] = {
    "API_VERSION": "crab.apiversion",
    "Command": "crab.commands",
    "CommandContext": "crab.commands",
    "CommandResult": "crab.commands",
    "Config": "crab.config",
    "ConfigError": "crab.errors",
    "ContextOverflowError": "crab.errors",
    "CrabError": "crab.errors",
    "PluginError": "crab.errors",
    "ProviderError": "crab.errors",
    "StoreError": "crab.errors",
    "ToolError": "crab.errors",
    "UsageError": "crab.errors",
    "CommandOutput": "crab.events",
    "ErrorEvent": "crab.events",
    "Event": "crab.events",
    "MessageEnd": "crab.events",
    "NoticeEvent": "crab.events",
    "RetryEvent": "crab.events",
    "TextDelta": "crab.events",
    "ThinkingDelta": "crab.events",
    "ToolCallEvent": "crab.events",
    "ToolResultEvent": "crab.events",
    "TurnEnded": "crab.events",
    "TurnStarted": "crab.events",
    "UsageEvent": "crab.events",
    "hookimpl": "crab.hookspecs",
    "Allow": "crab.interception",
    "Deny": "crab.interception",
    "Replace": "crab.interception",
    "AssistantMessage": "crab.messages",
    "Message": "crab.messages",
    "Thinking": "crab.messages",
    "ToolCall": "crab.messages",
    "ToolResultMessage": "crab.messages",
    "Usage": "crab.messages",
    "UserMessage": "crab.messages",
    "ModelInfo": "crab.providers",
    "ModelRequest": "crab.providers",
    "Provider": "crab.providers",
    "Renderer": "crab.render",
    "RendererSpec": "crab.render",
    "RenderTarget": "crab.render",
    "Entry": "crab.storage",
    "SessionInfo": "crab.storage",
    "Store": "crab.storage",
    "ConfigTable": "crab.config_tables",
    "InvalidValue": "crab.config_tables",
    "Setting": "crab.config_tables",
    "Tool": "crab.tools",
    "ToolContext": "crab.tools",
    "ToolResult": "crab.tools",
    "ToolSpec": "crab.tools",
    "tool": "crab.tools",
    "OutputLimit": "crab.truncate",
}

__all__ = [
    "API_VERSION",
    "Allow",
    "AssistantMessage",
    "Command",
    "CommandContext",
    "CommandOutput",
    "CommandResult",
    "Config",
    "ConfigError",
    "ConfigTable",
    "ContextOverflowError",
    "CrabError",
    "Deny",
    "Entry",
    "ErrorEvent",
    "Event",
    "InvalidValue",
    "Message",
    "MessageEnd",
    "ModelInfo",
    "ModelRequest",
    "NoticeEvent",
    "OutputLimit",
    "PluginError",
    "Provider",
    "ProviderError",
    "RenderTarget",
    "Renderer",
    "RendererSpec",
    "Replace",
    "RetryEvent",
    "SessionInfo",
    "Setting",
    "Store",
    "StoreError",
    "TextDelta",
    "Thinking",
    "ThinkingDelta",
    "Tool",
    "ToolCall",
    "ToolCallEvent",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolResultEvent",
    "ToolResultMessage",
    "ToolSpec",
    "TurnEnded",
    "TurnStarted",
    "Usage",
    "UsageError",
    "UsageEvent",
    "UserMessage",
    "__version__",
    "hookimpl",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'crab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
