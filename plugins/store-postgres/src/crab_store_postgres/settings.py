"""The ``[plugins.store-postgres]`` config table, declared for core to check (one-line errors, exit 2)."""

from __future__ import annotations

from crab import ConfigTable, Setting

PLUGIN = "store-postgres"

TABLE = ConfigTable(
    name=PLUGIN,
    doc="the postgres session store (several crab workers on one database)",
    settings=(
        Setting(
            "dsn",
            "str",
            doc="connection string (postgresql://user@host/db or key=value); CRAB_POSTGRES_DSN and "
            'the auth file\'s "postgres" entry come first; may hold a password (redacted)',
            trust_only=True,
        ),
        Setting(
            "schema",
            "str",
            "crab",
            "schema holding crab's tables (created when missing); one per crab deployment",
            trust_only=True,
        ),
        Setting("pool_size", "int", 4, "connections each crab process keeps open at most", minimum=1, maximum=100),
        Setting("connect_timeout", "float", 10.0, "seconds to wait for the server when connecting", above=0),
    ),
)
