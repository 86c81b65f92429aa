"""The plugin's ``[plugins.tools-basic]`` config table, read into one typed object."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from crab.config import crab_home
from crab.errors import ConfigError

Backend = Literal["auto", "rg", "python"]

DEFAULT_BASH_TIMEOUT = 120.0
MAX_BASH_TIMEOUT = 600.0
DEFAULT_LOG_RETENTION_DAYS = 7.0


def default_output_dir() -> Path:
    """Where bash keeps command logs: in the user's crab home (mode 0700), outside any workspace."""
    return crab_home() / "tools-basic" / "bash-logs"


@dataclass(frozen=True, slots=True)
class Settings:
    """What an operator may configure; every field has a safe default."""

    extra_roots: tuple[Path, ...] = ()
    bash_default_timeout: float = DEFAULT_BASH_TIMEOUT
    bash_max_timeout: float = MAX_BASH_TIMEOUT
    output_dir: Path | None = None
    grep_backend: Backend = "auto"
    allow_hardlinks: bool = False
    bash_log_retention_days: float = DEFAULT_LOG_RETENTION_DAYS

    @property
    def log_dir(self) -> Path:
        return self.output_dir if self.output_dir is not None else default_output_dir()


def _positive(table: Mapping[str, Any], key: str, default: float) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"[plugins.tools-basic] {key} must be a positive number of seconds, not {value!r}")
    return float(value)


def load_settings(table: Mapping[str, Any] | None, workspace: Path | None = None) -> Settings:
    """Read the config table; relative ``extra_roots`` are taken from ``workspace``."""
    table = table or {}
    roots = table.get("extra_roots", [])
    if isinstance(roots, str) or not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        raise ConfigError("[plugins.tools-basic] extra_roots must be a list of folder paths")
    base = workspace or Path.cwd()
    extra = tuple((base / Path(r).expanduser()).resolve() for r in roots)
    default = _positive(table, "bash_default_timeout", DEFAULT_BASH_TIMEOUT)
    maximum = _positive(table, "bash_max_timeout", MAX_BASH_TIMEOUT)
    if default > maximum:
        raise ConfigError("[plugins.tools-basic] bash_default_timeout must not exceed bash_max_timeout")
    output = table.get("output_dir")
    if output is not None and not isinstance(output, str):
        raise ConfigError("[plugins.tools-basic] output_dir must be a folder path")
    backend = table.get("grep_backend", "auto")
    if backend not in ("auto", "rg", "python"):
        raise ConfigError('[plugins.tools-basic] grep_backend must be "auto", "rg" or "python"')
    allow_hardlinks = table.get("allow_hardlinks", False)
    if not isinstance(allow_hardlinks, bool):
        raise ConfigError("[plugins.tools-basic] allow_hardlinks must be true or false")
    retention = table.get("bash_log_retention_days", DEFAULT_LOG_RETENTION_DAYS)
    if isinstance(retention, bool) or not isinstance(retention, int | float) or retention < 0:
        raise ConfigError(
            f"[plugins.tools-basic] bash_log_retention_days must be a number of days, 0 or more, not {retention!r}"
        )
    return Settings(
        extra_roots=extra,
        bash_default_timeout=default,
        bash_max_timeout=maximum,
        output_dir=Path(output).expanduser() if output else None,
        grep_backend=backend,
        allow_hardlinks=allow_hardlinks,
        bash_log_retention_days=float(retention),
    )
