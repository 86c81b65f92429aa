"""The plugin as crab sees it: entry point, API range, the tools and their permissions."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import crab_tools_basic
import pytest
from crab import Config, ConfigError
from crab.testing import build_host, check_range
from crab_tools_basic.guidance import GUIDANCE

EXPECTED = {
    "read": "read",
    "write": "write",
    "edit": "write",
    "bash": "exec",
    "bash_output": "read",
    "bash_kill": "read",
    "glob": "read",
    "grep": "read",
    "ls": "read",
}


def config(tmp_path: Path, table: dict[str, object] | None = None) -> Config:
    return Config(data={"plugins": {"tools-basic": table or {}}}, user_path=tmp_path / "config.toml", project_path=None)


def test_entry_point_and_api_range() -> None:
    found = {ep.name: ep.value for ep in entry_points(group="crab")}
    assert found.get("tools-basic") == "crab_tools_basic"
    assert check_range(crab_tools_basic.CRAB_API)


def test_host_registers_the_tools_with_their_permissions(tmp_path: Path) -> None:
    host = build_host(
        {"tools-basic": crab_tools_basic},
        config(tmp_path, {"bash_max_timeout": 30, "bash_default_timeout": 10}),
        builtins=False,
    )
    tools = host.registry("tools")
    assert {name: tool.permission for name, tool in tools.items()} == EXPECTED
    assert tools["bash"].timeout == 60  # the configured maximum plus the kill margin
    assert host.problems() == []


def test_descriptions_state_the_limits(tmp_path: Path) -> None:
    tools = {t.name: t for t in crab_tools_basic.crab_tools(config(tmp_path))}
    assert "2,000 lines or 50 KB" in tools["read"].description
    assert "read of the file" in tools["write"].description
    assert "exactly once" in tools["edit"].description
    assert "120 s" in tools["bash"].description and "600 s" in tools["bash"].description
    assert "1,000" in tools["glob"].description
    assert "100 matching" in tools["grep"].description and "500 characters" in tools["grep"].description
    assert "500 entries" in tools["ls"].description
    for tool in tools.values():
        assert tool.output_limit is None  # each tool cuts its own output, more precisely than the loop


def _parameter_texts(schema: dict[str, Any]) -> Iterator[str]:
    """Every parameter description of a schema, nested ones (edit's ``old``, ``new``) included."""
    for value in (schema.get("properties") or {}).values():
        if "description" in value:
            yield value["description"]
        yield from _parameter_texts(value)
        yield from _parameter_texts(value.get("items") or {})


def _runs(text: str, size: int = 6) -> set[str]:
    words = re.findall(r"[\w'`.-]+", text.lower())
    return {" ".join(words[i : i + size]) for i in range(len(words) - size + 1)}


def test_each_thing_is_said_once(tmp_path: Path) -> None:
    """Every token is paid on every request (issue 38): no run of six words in both a tool's
    description and one of its parameters' descriptions or the guidance, and no parameter
    repeating core's prompt ("paths are relative to the workspace")."""
    for tool in crab_tools_basic.crab_tools(config(tmp_path)):
        parameters = list(_parameter_texts(tool.parameters))
        assert parameters, tool.name
        for text in parameters:
            assert "relative to the workspace" not in text, (tool.name, text)
            assert not _runs(text) & _runs(tool.description), (tool.name, text)
        assert not _runs(tool.description) & _runs(GUIDANCE), tool.name


@pytest.mark.parametrize(
    "table",
    [
        {"bash_max_timeout": -1},
        {"bash_default_timeout": 700},
        {"extra_roots": "/tmp"},
        {"grep_backend": "ag"},
        {"output_dir": 3},
    ],
)
def test_bad_settings_fail_registration(tmp_path: Path, table: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        crab_tools_basic.crab_tools(config(tmp_path, table))


def test_crab_tools_lists_whole_sentences(crab_cli) -> None:
    # glob's description wraps in its docstring: `crab tools` cut it at the line end ("with `/` it").
    result = crab_cli("tools", "--plugins", "tools-basic")
    assert result.exit_code == 0, result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines()}
    assert lines["glob"].endswith("ls lists one folder instead."), lines["glob"]
    assert all(line.rstrip().endswith((".", ")", "`")) for line in lines.values()), lines
