"""The plugin's ``[plugins.tools-basic]`` config table: its declaration, and the typed object read from it.

Core checks the table against ``TABLE`` (one-line errors naming the file and key, exit 2) and
drops its trust-only keys when an untrusted project config sets them; ``load_settings`` only
turns checked values into ``Settings``.
"""

from __future__ import annotations

from collections.abc import Mapping
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from crab import ConfigTable, InvalidValue, Setting
from crab.config import crab_home, validate_table

Backend = Literal["auto", "rg", "python"]

PLUGIN = "tools-basic"
DEFAULT_BASH_TIMEOUT = 120.0
MAX_BASH_TIMEOUT = 600.0
LOG_RETENTION_DAYS = 7.0
MAX_JOBS = 8
JOB_BUFFER = 1 << 20


def _check(values: Mapping[str, Any]) -> None:
    default, most = values.get("bash_default_timeout"), values["bash_max_timeout"]
    if default is not None and default > most:
        raise InvalidValue(
            ("plugins", PLUGIN, "bash_default_timeout"), f"a number <= bash_max_timeout ({most:g})", default
        )


TABLE = ConfigTable(
    name=PLUGIN,
    doc="the basic tools",
    settings=(
        Setting(
            "extra_roots",
            "list[str]",
            [],
            "folders outside the workspace the tools may use (relative to the workspace)",
            trust_only=True,
        ),
        Setting(
            "bash_default_timeout",
            "float",
            doc=f"seconds a bash command may run (default {DEFAULT_BASH_TIMEOUT:g}, at most bash_max_timeout)",
            above=0,
        ),
        Setting("bash_max_timeout", "float", MAX_BASH_TIMEOUT, "the most seconds a model may ask for", above=0),
        Setting(
            "output_dir",
            "str",
            doc="folder for full bash logs, readable by the tools (default: $CRAB_HOME/tools-basic/bash-logs)",
            trust_only=True,
        ),
        Setting("grep_backend", "str", "auto", "grep engine", choices=("auto", "rg", "python")),
        Setting(
            "allow_hardlinks",
            "bool",
            False,
            "read and edit files with more than one hard link inside the workspace",
            trust_only=True,
        ),
        Setting("bash_log_retention_days", "float", LOG_RETENTION_DAYS, "days bash logs are kept", minimum=0),
        Setting(
            "bash_max_jobs",
            "int",
            MAX_JOBS,
            "background shells (bash with background: true) a session may run at once; 0 turns them off",
            minimum=0,
            maximum=64,
        ),
        Setting(
            "bash_job_buffer",
            "int",
            JOB_BUFFER,
            "bytes of a background shell's latest output kept for bash_output (older output is dropped)",
            minimum=4096,
            maximum=64 << 20,
        ),
    ),
    check=_check,
)


LOGS_IN_HOME = ("tools-basic", "bash-logs")
"""The default log folder's place in crab's folder."""


def default_output_dir(home: Path | None = None) -> Path:
    """Where bash keeps command logs: in the user's crab home (``home``, default ``crab_home()``;
    mode 0700), outside any workspace."""
    return (home if home is not None else crab_home()).joinpath(*LOGS_IN_HOME)


@dataclass(frozen=True, slots=True)
class Settings:
    """What an operator may configure; every field has a safe default."""

    extra_roots: tuple[Path, ...] = ()
    bash_default_timeout: float = DEFAULT_BASH_TIMEOUT
    bash_max_timeout: float = MAX_BASH_TIMEOUT
    output_dir: Path | None = None
    grep_backend: Backend = "auto"
    allow_hardlinks: bool = False
    bash_log_retention_days: float = LOG_RETENTION_DAYS
    bash_max_jobs: int = MAX_JOBS
    bash_job_buffer: int = JOB_BUFFER

    @property
    def log_dir(self) -> Path:
        return self.output_dir if self.output_dir is not None else default_output_dir()


_checked: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
"""``validate_table``'s answer per table object (by id), beside a copy of what the table held."""
_CHECKED_MAX = 32


def checked_values(table: Mapping[str, Any] | None) -> dict[str, Any]:
    """``validate_table(TABLE, table)``, checked once per table and content, not once per call.

    A table is looked up by identity and used only while it still holds what was checked (a
    caller may change its table; an id may be reused), so the answer is always that of the
    table as it is now. Raises ``InvalidValue`` as ``validate_table`` does, and caches nothing then.
    """
    if not isinstance(table, Mapping):
        return validate_table(TABLE, table)
    kept = _checked.get(id(table))
    if kept is not None and kept[0] == table:
        return kept[1]
    copy = deepcopy(dict(table))  # what is compared later must not change with the table
    values = validate_table(TABLE, copy)
    if len(_checked) >= _CHECKED_MAX:
        _checked.clear()  # tables come one per config: many means configs came and went
    _checked[id(table)] = (copy, values)
    return values


def load_settings(table: Mapping[str, Any] | None, workspace: Path | None = None) -> Settings:
    """The table as ``Settings``; relative ``extra_roots`` are taken from ``workspace``.

    The table is checked against ``TABLE`` again (once per table: ``checked_values``), so code
    handed an unchecked table (tests, a harness) gets the same one-line errors. ``extra_roots``
    are resolved on every call: a root's symlinks are followed as they are now.
    """
    values = checked_values(table)
    output = values.get("output_dir")
    # Nothing to resolve (no extra roots, no ~ to expand, a given workspace): the same checked
    # values (the very object ``checked_values`` keeps) give the same Settings, made once.
    fixed = workspace is not None and not values["extra_roots"] and not (output and output.startswith("~"))
    if fixed:
        kept = _SETTINGS.get((id(values), workspace))
        if kept is not None and kept[0] is values:  # held here, so its id cannot be another's
            return kept[1]
    base = workspace or Path.cwd()
    settings = Settings(
        extra_roots=tuple((base / Path(r).expanduser()).resolve() for r in values["extra_roots"]),
        bash_default_timeout=values.get("bash_default_timeout")
        or min(DEFAULT_BASH_TIMEOUT, values["bash_max_timeout"]),
        bash_max_timeout=values["bash_max_timeout"],
        output_dir=Path(output).expanduser() if output else None,
        grep_backend=values["grep_backend"],
        allow_hardlinks=values["allow_hardlinks"],
        bash_log_retention_days=values["bash_log_retention_days"],
        bash_max_jobs=values["bash_max_jobs"],
        bash_job_buffer=values["bash_job_buffer"],
    )
    if fixed:
        if len(_SETTINGS) >= _CHECKED_MAX:
            _SETTINGS.clear()
        _SETTINGS[(id(values), workspace)] = (values, settings)
    return settings


_SETTINGS: dict[tuple[int, Path | None], tuple[dict[str, Any], Settings]] = {}
"""``load_settings``' answer per checked values object and workspace, when it resolves nothing."""
