"""Declared config tables: the keys a table has, their types, defaults, limits, and trust; core's
``[crab]`` and ``[serve]`` here, each plugin's through ``crab_config_table`` (docs/configuration.md)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from crab._contracts.errors import ConfigError

Kind = Literal["str", "int", "float", "bool", "list[str]", "table"]
KINDS: tuple[Kind, ...] = ("str", "int", "float", "bool", "list[str]", "table")
Parts = tuple[str, ...]

TrustFilter = Callable[[Mapping[str, Any], Mapping[str, Any]], Iterable[Parts]]
"""``(project_table, trusted_table) -> keys to drop``: a table's own rule for what an untrusted
project may not set, for cases a per-key flag cannot express (a ``base_url`` combined with a key).
``trusted_table`` is the same table merged from every layer except the project's. Keys are paths
relative to the table."""

TableCheck = Callable[[Mapping[str, Any]], None]
"""Checks a validated table as a whole (cross-key rules, nested tables); raises ``InvalidValue``."""

DEFAULT_MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""``[crab] max_image_bytes``: the largest image kept (after any downscale); Anthropic's own cap."""
DEFAULT_MAX_IMAGE_SIDE = 2048
"""``[crab] max_image_side``: longer sides are downscaled to it where Pillow is importable."""


def format_key(parts: Sequence[str]) -> str:
    """A key path as a TOML dotted key: ``plugins.provider-openai.models."gpt-4.1".context_window``."""
    import json  # only when a key needs quoting: crab --help must not load json

    shown = []
    for part in parts:
        bare = part and all(c.isalnum() or c in "-_" for c in part) and part.isascii()
        shown.append(part if bare else json.dumps(part))
    return ".".join(shown)


def show_value(value: Any) -> str:
    """A found value as TOML would spell it, cut short: ``"hot"``, ``2.5``, ``true``, ``a table``."""
    if value is None:
        return "nothing"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, bool | int | float | str | list):
        import json

        text = json.dumps(value, ensure_ascii=False, default=str)
    else:
        text = str(value)
    return text if len(text) <= 80 else text[:79] + "…"


class InvalidValue(ConfigError):
    """One bad config value: ``key: expected …, found …``; ``source`` says where it was set."""

    def __init__(self, key: Sequence[str], expected: str, found: Any, source: str | None = None) -> None:
        self.key: Parts = tuple(key)
        self.expected = expected
        self.found = found
        self.source = source
        where = f"{source}: " if source else "config: "
        super().__init__(f"{where}{format_key(self.key)}: expected {expected}, found {show_value(found)}")

    def at(self, source: str) -> InvalidValue:
        """The same problem, naming the file, variable or flag the value came from."""
        return InvalidValue(self.key, self.expected, self.found, source)


def _number(bound: float) -> str:
    """A bound as written in a config: ``10000``, not ``1e+04``; ``0.5`` as it is."""
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


INT_BOUND = 1 << 63
"""Integers in a config table lie in ``[-INT_BOUND, INT_BOUND)``, TOML's own 64-bit range."""


@dataclass(frozen=True)
class Setting:
    """One key of a config table.

    ``kind`` is ``str``, ``int``, ``float`` (an int is accepted), ``bool``, ``list[str]`` or
    ``table``. ``default`` None means unset. ``minimum``/``maximum`` are inclusive, ``above`` is an
    exclusive lower bound; an ``int`` is never outside a signed 64-bit number (``INT_BOUND``) even
    when no bound is declared: TOML's integers are, and a store or an API could not hold more.
    ``trust_only`` keys are ignored when an untrusted project config sets them (declare every key
    that widens permissions, reaches outside the workspace, routes a key, starts a process or
    opens a listener). ``trust_order`` lists values from narrowest to
    widest: an untrusted project may pick a value no wider than the one the user's layers give.
    """

    name: str
    kind: Kind
    default: Any = None
    doc: str = ""
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    choices: tuple[Any, ...] = ()
    trust_only: bool = False
    trust_order: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Setting {self.name!r}: kind must be one of {', '.join(KINDS)}, not {self.kind!r}")

    @property
    def expected(self) -> str:
        """What a valid value looks like, in words (used in error lines and listings)."""
        if self.choices:
            return "one of " + ", ".join(show_value(c) for c in self.choices)
        words = {
            "str": "a string",
            "int": "a whole number",
            "float": "a number",
            "bool": "true or false",
            "list[str]": "a list of strings",
            "table": "a table",
        }[self.kind]
        bounds = []
        if self.above is not None:
            bounds.append(f"> {_number(self.above)}")
        if self.minimum is not None:
            bounds.append(f">= {_number(self.minimum)}")
        if self.maximum is not None:
            bounds.append(f"<= {_number(self.maximum)}")
        return " ".join([words, *bounds]) if bounds else words

    @property
    def trust(self) -> str:
        """``trust-only``, ``trust-only when wider`` or empty (for listings)."""
        if self.trust_only:
            return "trust-only"
        return "trust-only when wider" if self.trust_order else ""

    def check(self, value: Any, key: Parts) -> Any:
        """``value`` converted (an int to float for ``float``), or ``InvalidValue``."""
        kind = self.kind
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if kind == "str":
            ok = isinstance(value, str)
        elif kind == "int":
            ok = isinstance(value, int) and not isinstance(value, bool) and -INT_BOUND <= value < INT_BOUND
        elif kind == "float":
            ok = number
        elif kind == "bool":
            ok = isinstance(value, bool)
        elif kind == "list[str]":
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        else:
            ok = isinstance(value, Mapping)
        if ok and self.choices:
            ok = value in self.choices
        if ok and number:
            # TOML spells nan and inf: nan passes every comparison, and neither is an amount
            # (``x - x`` is 0 only for a finite number; no math import on crab's start-up path).
            ok = value - value == 0 and not (
                (self.minimum is not None and value < self.minimum)
                or (self.maximum is not None and value > self.maximum)
                or (self.above is not None and value <= self.above)
            )
        if not ok:
            raise InvalidValue(key, self.expected, value)
        return float(value) if kind == "float" else value

    def widens(self, new: Any, old: Any) -> bool:
        """Whether ``new`` grants more than ``old`` on this key's ``trust_order``."""
        order = self.trust_order
        if new not in order:
            return False
        return old not in order or order.index(new) > order.index(old)


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


@dataclass(frozen=True)
class ConfigTable:
    """The declared keys of one table: ``crab`` for core, else a plugin's name (``[plugins.<name>]``).

    ``check`` runs on the validated values for cross-key rules and nested tables; ``trust_filter``
    names further keys an untrusted project may not set (see ``TrustFilter``).
    """

    name: str
    settings: tuple[Setting, ...]
    doc: str = ""
    check: TableCheck | None = field(default=None, compare=False)
    trust_filter: TrustFilter | None = field(default=None, compare=False)
    top_level: bool = False
    """Core's own tables besides ``[crab]`` (``[serve]``) live at the top, not under ``[plugins]``."""

    @property
    def path(self) -> Parts:
        """Where the table lives: ``("crab",)``, ``("serve",)`` or ``("plugins", name)``."""
        return (self.name,) if self.name == "crab" or self.top_level else ("plugins", self.name)

    def setting(self, name: str) -> Setting | None:
        return next((s for s in self.settings if s.name == name), None)

    def validate(self, raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """(values with defaults filled, unknown key names); raises ``InvalidValue``."""
        values: dict[str, Any] = {}
        unknown: list[str] = []
        for key, value in raw.items():
            setting = self.setting(key)
            if setting is None:
                unknown.append(key)
                values[key] = value
            else:
                values[key] = setting.check(value, (*self.path, key))
        for setting in self.settings:
            if setting.name not in values and setting.default is not None:
                values[setting.name] = copy.deepcopy(setting.default)
        if self.check is not None:
            self.check(values)
        return values, unknown


def validate_table(table: ConfigTable, raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """A plugin's raw table checked and filled with defaults (for code handed an unchecked table)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise InvalidValue(table.path, "a table", raw)
    values, _ = table.validate(raw)
    return values


PERMISSION_MODES = ("read-only", "plan", "ask", "yolo")

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
