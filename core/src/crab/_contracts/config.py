"""The configuration as plugins see it (``crab.Config``): merged values, the layers they came from
and what checking them found. Reading, merging and checking the layers is ``crab._config``'s work
(``LayeredConfig``, ``load_config``): the contracts hold the data, so the handle and the tool
context can name its type without importing the loader."""

from __future__ import annotations

import shlex
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from crab._contracts.config_tables import ConfigTable, Parts
from crab._contracts.errors import ConfigError

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

    def source_of(self, parts: Sequence[str]) -> str:
        """Which layer gave the value at ``parts`` (the last one that set it, or a parent of it)."""
        for layer in reversed(self._effective or self.layers):
            node: Any = layer.data
            for part in parts:
                if not isinstance(node, Mapping):
                    return layer.source
                if part not in node:
                    break
                node = node[part]
            else:
                return layer.source
        return "config"

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
