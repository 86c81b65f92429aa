"""The ``[plugins.tape-jsonl]`` config table, declared for core to check (one-line errors, exit 2)."""

from __future__ import annotations

from crab import ConfigTable, Setting

PLUGIN = "tape-jsonl"

TABLE = ConfigTable(
    name=PLUGIN,
    doc="the jsonl session store",
    settings=(
        Setting(
            "root",
            "str",
            doc="folder of session tapes (default: $CRAB_HOME/sessions); where crab writes",
            trust_only=True,
        ),
        Setting("fsync", "bool", False, "wait for the disk after each append (survives power loss)"),
    ),
)
