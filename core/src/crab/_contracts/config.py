"""The configuration's contracts: declared tables (``ConfigTable`` of ``Setting``: the keys a table
has, their types, defaults, limits and trust; each plugin's through ``crab_config_table``) and the
merged configuration plugins read (``crab.Config``: values, the layers they came from, what checking
them found). Reading, merging and checking the layers is ``crab._config``'s work (``LayeredConfig``,
``load_config``), and core's own ``[crab]``/``[serve]`` tables are ``crab._config.core_tables``
(docs/configuration.md)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
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


LayerKind = Literal["user", "project", "env", "flag"]
TrustStatus = Literal["trusted", "untrusted", "changed"]


@dataclass(frozen=True)
class Layer:
    """One source of settings: ``source`` names it in messages (a file, a variable, ``--set``)."""

    kind: LayerKind
    source: str
    data: dict[str, Any]


@dataclass(frozen=True)
class TrustState:
    """One project config's trust: ``trusted``, ``untrusted`` (never trusted) or ``changed``."""

    config_path: Path
    sha256: str
    status: TrustStatus

    @property
    def trusted(self) -> bool:
        return self.status == "trusted"

    @property
    def command(self) -> str:
        """The exact command that trusts this project (``/p`` for ``/p/.crab/config.toml``)."""
        import shlex  # only when a line names the command: crab --help must not load it

        return f"crab trust {shlex.quote(str(self.config_path.parent.parent))}"

    def describe(self) -> str:
        """One line for ``crab doctor``."""
        if self.status == "trusted":
            return f"project {self.config_path} is trusted"
        if self.status == "changed":
            return (
                f"project {self.config_path} changed since you trusted it: its trust-only keys are ignored "
                f"until you run `{self.command}`"
            )
        return f"project {self.config_path} is not trusted: its trust-only keys are ignored (`{self.command}`)"

    def ignored(self, keys: list[str]) -> str:
        """The one line shown when this untrusted project's trust-only keys were dropped."""
        why = "changed since you trusted it" if self.status == "changed" else "not trusted"
        return (
            f"ignored trust-only settings from project config {self.config_path} ({why}): "
            f"{', '.join(keys)}; run `{self.command}` to apply them"
        )


@dataclass
class Config:
    """The merged configuration, the layers it came from, and what validation found.

    ``data`` holds validated values with defaults filled for every declared table; ``ignored``
    names the trust-only keys dropped from an untrusted project; ``warnings`` are one-line notes
    (unknown keys) to show once per command.
    """

    data: dict[str, Any]
    user_path: Path
    project_path: Path | None
    layers: list[Layer] = field(default_factory=list)
    trust: TrustState | None = None
    ignored: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    project_disabled: list[str] = field(default_factory=list)
    """Plugins an untrusted project switched off (it may narrow what loads): named in ``notices``."""
    kept_guards: list[str] = field(default_factory=list)
    """Plugins an untrusted project tried to switch off that guard tool or model calls: they stay
    on (the plugin host decides, ``plugin_host.GUARD_HOOKS``), named in ``notices``."""
    unread: list[str] = field(default_factory=list)
    """Config files found but not read (a project's config that is a folder): kept in ``warnings``."""
    tables: dict[Parts, ConfigTable] = field(default_factory=dict)
    _effective: list[Layer] = field(default_factory=list, repr=False)

    def get(self, key: str, default: Any = None) -> Any:
        parts = key.split(".")
        if not all(parts):
            raise ConfigError(f"invalid config key {key!r}: use dotted names like crab.model")
        node: Any = self.data
        for part in parts:
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def plugin_settings(self, name: str) -> Mapping[str, Any]:
        """The ``[plugins.<name>]`` table, validated and with defaults once the plugin declared it."""
        table = self.get(f"plugins.{name}")
        return table if isinstance(table, Mapping) else {}

    def resolve(self, tables: Iterable[ConfigTable] = (), plugins: Collection[str] | None = None) -> None:
        """Merge the layers again, checking ``[crab]`` and the given plugin tables.

        Drops what an untrusted project may not set, fills defaults, and raises ``InvalidValue``
        (one line: source, key, expected, found) for the first bad value. With ``plugins`` (every
        plugin crab knows of, installed or not enabled), a ``[plugins.NAME]`` table none of them
        answers to warns: a misspelt name would otherwise do nothing without a word. A ``Config``
        built by hand is left as it is: the config crab loads (``crab._config.layers.LayeredConfig``)
        does the merging.
        """

    def notices(self) -> list[str]:
        """The lines to show once per command: dropped trust-only keys, plugins an untrusted project
        switched off, then unknown keys."""
        lines = []
        if self.ignored and self.trust is not None:
            lines.append(self.trust.ignored(self.ignored))
        if self.project_disabled and self.project_path is not None:
            # Narrowing needs no trust, but a guard plugin switched off must not go unseen.
            lines.append(
                f"project config {self.project_path} (not trusted) switches off plugins: "
                f"{', '.join(self.project_disabled)}"
            )
        for name in self.kept_guards:
            lines.append(
                f"project config {self.project_path} (not trusted) cannot switch off {name}: it guards "
                "tool or model calls; `crab trust` the project to let it"
            )
        return [*lines, *self.warnings]
