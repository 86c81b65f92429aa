"""Core's own settings tables, ``[crab]`` and ``[serve]``: what they hold is core's configuration,
declared with the same ``ConfigTable`` a plugin's table uses (the contract stays in
``crab._contracts.config``; docs/configuration.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crab._contracts.config import (
    DEFAULT_MAX_IMAGE_BYTES,
    DEFAULT_MAX_IMAGE_SIDE,
    ConfigTable,
    InvalidValue,
    Parts,
    Setting,
)

PERMISSION_MODES = ("read-only", "plan", "ask", "yolo")


@dataclass(frozen=True)
class ModelSetting(Setting):
    """``[crab] model``: a string, or a TOML list of ``provider/model`` strings (a fallback chain),
    kept as the comma-separated string the model choice reads, in the list's order."""

    @property
    def expected(self) -> str:
        return "a string or a list of provider/model strings"

    def check(self, value: Any, key: Parts) -> Any:
        if not isinstance(value, list):
            return super().check(value, key)
        if not value:
            raise InvalidValue(key, self.expected, value)
        for index, item in enumerate(value, 1):
            if not isinstance(item, str) or not item.strip() or "," in item:
                raise InvalidValue(key, f"entry {index} to be one provider/model string", item)
        return ", ".join(item.strip() for item in value)


_CAPS = ("max_image_bytes",)
"""``[crab]`` caps an untrusted project may lower but never raise past what the user's layers give."""


def _core_trust_filter(project: Mapping[str, Any], trusted: Mapping[str, Any]) -> list[Parts]:
    """The caps in ``_CAPS`` an untrusted project sets above the user's value (or the default)."""
    drops: list[Parts] = []
    for name in _CAPS:
        asked = project.get(name)
        setting = CORE_TABLE.setting(name)
        bound = trusted.get(name, setting.default if setting else None)
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (asked, bound))
        if name in project and numbers and asked > bound:  # a bad value is left to the check
            drops.append((name,))
    return drops


CORE_TABLE = ConfigTable(
    name="crab",
    doc="core's own settings",
    settings=(
        Setting("provider", "str", doc="provider name (default: the only loaded provider)"),
        ModelSetting(
            "model",
            "str",
            doc="model id, or provider/model; several (a list, or comma-separated) are tried in order (fallback)",
        ),
        Setting("store", "str", doc="session store (default: the first persistent store loaded, else memory)"),
        Setting(
            "thinking",
            "str",
            doc="how hard the model thinks: off, low, medium or high (default: the provider's own setting)",
            choices=("off", "low", "medium", "high"),
        ),
        Setting("renderer", "str", doc="renderer for chat and text output (default: a plugin's first, else plain)"),
        Setting(
            "permissions",
            "str",
            "ask",
            "the permission gate: ask, yolo (allow everything), read-only, or plan (read-only until the "
            "user approves a plan, then ask)",
            choices=("ask", "yolo", "read-only", "plan"),
            trust_order=PERMISSION_MODES,
        ),
        Setting("max_iterations", "int", 25, "model calls per turn", minimum=1, maximum=10_000),
        Setting(
            "output_retries",
            "int",
            1,
            "times a typed answer that does not match its schema goes back to the model",
            minimum=0,
            maximum=10,
        ),
        Setting(
            "tool_timeout",
            "float",
            120.0,
            "seconds for a tool call whose tool sets no timeout",
            above=0,
            maximum=86_400,
        ),
        Setting(
            "request_timeout",
            "float",
            600.0,
            "seconds one model call may take, retries included",
            above=0,
            maximum=86_400,
        ),
        Setting("max_tokens", "int", doc="output token limit passed to the provider", minimum=1, maximum=100_000_000),
        Setting("temperature", "float", doc="sampling temperature passed to the provider", minimum=0),
        Setting(
            "tool_view",
            "str",
            "progressive",
            "progressive: every tool as a constant stub (name, one line, parameter types); full: every schema",
            choices=("progressive", "full"),
        ),
        Setting(
            "context_window",
            "int",
            doc="tokens the model reads (default: the provider's model info)",
            minimum=1,
            maximum=1_000_000_000,
        ),
        Setting("compact_at", "float", 0.8, "share of the window at which history is compacted", above=0, maximum=1),
        Setting("system_prompt_append", "str", doc="text appended to the system prompt, after every plugin's part"),
        Setting(
            "max_image_bytes",
            "int",
            DEFAULT_MAX_IMAGE_BYTES,
            "largest image kept (bytes, after a downscale where Pillow is installed)",
            minimum=1024,
            maximum=100 * 1024 * 1024,
        ),
        Setting(
            "max_image_side",
            "int",
            DEFAULT_MAX_IMAGE_SIDE,
            "images with a longer side are downscaled to it where Pillow is installed",
            minimum=64,
            maximum=20_000,
        ),
    ),
    trust_filter=_core_trust_filter,
)
"""``[crab]``: the keys core reads."""

SERVE_TABLE = ConfigTable(
    name="serve",
    doc="`crab serve`: which channels run, where their turns run, how they restart and how they stop",
    top_level=True,
    settings=(
        Setting(
            "channels",
            "list[str]",
            [],
            "channels `crab serve` runs when named none (each opens a listener or a bot)",
            trust_only=True,
        ),
        Setting(
            "engine",
            "str",
            doc="where channels' turns run: a turn engine a plugin offers (crab_turn_engines); unset: in this process",
            trust_only=True,
        ),
        Setting(
            "grace_seconds",
            "float",
            30.0,
            "on SIGTERM, seconds running turns may take to finish",
            minimum=0,
            maximum=86_400,
        ),
        Setting(
            "restart_delay", "float", 1.0, "first wait before restarting a channel that failed", above=0, maximum=86_400
        ),
        Setting(
            "restart_max_delay",
            "float",
            60.0,
            "longest wait between restarts (the wait doubles)",
            above=0,
            maximum=86_400,
        ),
    ),
)
"""``[serve]``: the keys ``crab serve`` reads."""
