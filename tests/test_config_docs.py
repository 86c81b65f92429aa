"""docs/configuration.md lists every key core and the first-party plugins declare, marked
trust-only where the declaration says so (the listing must not go stale)."""

from __future__ import annotations

from pathlib import Path

from crab._config.core_tables import CORE_TABLE, SERVE_TABLE
from crab._contracts.config import ConfigTable
from crab_hooks.settings import TABLE as HOOKS
from crab_mcp.settings import TABLE as MCP
from crab_provider_anthropic.settings import TABLE as ANTHROPIC
from crab_provider_mock import crab_config_table as mock_table
from crab_provider_openai.settings import TABLE as OPENAI
from crab_schedule.settings import TABLE as SCHEDULE
from crab_skills.settings import TABLE as SKILLS
from crab_store_sqlite.settings import TABLE as SQLITE
from crab_tape_jsonl.settings import TABLE as JSONL
from crab_telegram.settings import TABLE as TELEGRAM
from crab_tools_basic.settings import TABLE as TOOLS
from crab_tools_web.settings import TABLE as WEB

ROOT = Path(__file__).resolve().parents[1]
TABLES: list[ConfigTable] = [
    CORE_TABLE,
    SERVE_TABLE,
    TOOLS,
    OPENAI,
    ANTHROPIC,
    JSONL,
    SQLITE,
    SKILLS,
    WEB,
    mock_table(),
    MCP,
    TELEGRAM,
    SCHEDULE,
    HOOKS,
]


def test_every_declared_key_is_documented() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text()
    for table in TABLES:
        for setting in table.settings:
            assert f"`{setting.name}`" in text, f"{table.name}.{setting.name}"
            if setting.trust_only:
                assert f"`{setting.name}` **T**" in text, f"{table.name}.{setting.name} is trust-only"


def test_every_trust_only_key_is_in_the_security_doc() -> None:
    text = (ROOT / "docs" / "security.md").read_text()
    for table in TABLES:
        for setting in table.settings:
            if setting.trust:
                assert f"{setting.name}" in text, f"{table.name}.{setting.name}"
