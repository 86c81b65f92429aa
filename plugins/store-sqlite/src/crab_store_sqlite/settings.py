"""The ``[plugins.store-sqlite]`` config table, declared for core to check (one-line errors, exit 2)."""

from __future__ import annotations

from crab import ConfigTable, Setting

PLUGIN = "store-sqlite"

TABLE = ConfigTable(
    name=PLUGIN,
    doc="the sqlite session store",
    settings=(
        Setting(
            "path",
            "str",
            doc=(
                "database file (default: $CRAB_HOME/crab.db); where crab writes; `:memory:` is refused"
                ' (`[crab] store = "memory"` keeps sessions in this process only)'
            ),
            trust_only=True,
        ),
        Setting("busy_timeout", "float", 10.0, "seconds to wait while another process holds the database", minimum=0),
        Setting(
            "synchronous",
            "str",
            "normal",
            "full also survives power loss (each commit waits for the disk)",
            choices=("normal", "full"),
        ),
    ),
)
