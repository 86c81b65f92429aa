"""The plugin's ``[plugins.tools-basic]`` config table: its declaration, and the typed object read from it.

Core checks the table against ``TABLE`` (one-line errors naming the file and key, exit 2) and
drops its trust-only keys when an untrusted project config sets them; ``load_settings`` only
turns checked values into ``Settings``.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    bash_log_retention_days: float = LOG_RETENTION_DAYS
    bash_max_jobs: int = MAX_JOBS
    bash_job_buffer: int = JOB_BUFFER

    @property
    def log_dir(self) -> Path:
        return self.output_dir if self.output_dir is not None else default_output_dir()


def load_settings(table: Mapping[str, Any] | None, workspace: Path | None = None) -> Settings:
    """The table as ``Settings``; relative ``extra_roots`` are taken from ``workspace``.

    The table is checked against ``TABLE`` again, so code handed an unchecked table (tests, a
    harness) gets the same one-line errors.
    """
    values = validate_table(TABLE, table)
    base = workspace or Path.cwd()
    output = values.get("output_dir")
    return Settings(
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
