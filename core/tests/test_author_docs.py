"""The author's reference is complete: every public name, hook, `@crab.tool` option, protocol
member and event class is documented, and the scripted provider's script format is too.

docs/plugins.md is the reference an author reads; docs/api.md lists every public name; the tests
below fail when something an author can use has no documentation in them.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import crab
import crab._host.hookspecs
import pytest
from crab._values.tool_decorator import make_tool
from crab.testing.scripted import STEP_KEYS

ROOT = Path(__file__).resolve().parents[2]
PLUGINS_MD = (ROOT / "docs" / "plugins.md").read_text()
API_MD = (ROOT / "docs" / "api.md").read_text()
TESTING_MD = (ROOT / "docs" / "testing.md").read_text()
PUBLIC = (
    "crab",
    *(f"crab.{name}" for name in ("config", "events", "hooks", "messages", "processes", "rendering")),
    *(f"crab.{name}" for name in ("secrets", "steps", "storage", "tools")),
    "crab.testing",
    "crab_provider_kit",
    "crab_sql_kit",
    "crab_jobs_kit",
    "crab_frontmatter_kit",
)


def documented(name: str, text: str) -> bool:
    return re.search(rf"`{re.escape(name)}[`(.\[ ]", text) is not None


def members(cls: type) -> list[str]:
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls) if f.name != "plugin"]  # `plugin` is set by crab
    return [n for n, _ in inspect.getmembers(cls) if not n.startswith("_")]


@pytest.mark.parametrize("module", PUBLIC)
def test_every_public_name_is_documented(module: str):
    names = importlib.import_module(module).__all__
    missing = [n for n in names if n != "__version__" and not documented(n, PLUGINS_MD + API_MD)]
    assert missing == [], f"document these in docs/plugins.md or docs/api.md: {missing}"


def test_every_hook_is_in_the_authors_reference():
    hooks = [n for n in dir(crab._host.hookspecs) if n.startswith("crab_")]
    assert len(hooks) >= 15
    assert [h for h in hooks if not documented(h, PLUGINS_MD)] == []


def test_every_tool_decorator_option_is_documented():
    options = [p for p in inspect.signature(make_tool).parameters if p != "fn"]
    assert {"permission", "timeout", "exclusive", "override", "output_limit"} <= set(options)
    assert [o for o in options if not documented(o, PLUGINS_MD)] == []
    assert [f for f in members(crab.Tool) if f not in ("handler", "fn") and not documented(f, PLUGINS_MD)] == []


@pytest.mark.parametrize(
    "cls",
    [
        crab.ToolContext,
        crab.ToolResult,
        crab.rendering.RenderTarget,
        crab.rendering.RendererSpec,
        crab.Command,
        crab.CommandContext,
        crab.CommandResult,
        crab.Setting,
        crab.ConfigTable,
        crab.ModelInfo,
        crab.ModelRequest,
        crab.AgentHandle,
        crab.PluginStatus,
        crab.Renderer,
        crab.Channel,
        crab.Provider,
        crab.Store,
    ],
    ids=lambda c: c.__name__,
)
def test_every_field_and_method_an_author_meets_is_documented(cls: type):
    missing = [m for m in members(cls) if not documented(m, PLUGINS_MD)]
    assert missing == [], f"{cls.__name__}: document {missing} in docs/plugins.md"


def test_every_event_class_is_listed_with_its_json_type():
    events = [getattr(crab.events, n) for n in crab.events.__all__ if inspect.isclass(getattr(crab.events, n))]
    events = [e for e in events if issubclass(e, crab.events.Event)]
    assert len(events) >= 13
    for event in events:
        row = re.search(rf"^\| `{event.__name__}` \| `\"{event.type}\"` \|(.*)$", PLUGINS_MD, re.M)
        assert row, f"docs/plugins.md: add a row for {event.__name__} with JSON type {event.type!r}"
        fields = [f.name for f in dataclasses.fields(event)]
        assert [f for f in fields if f"`{f}`" not in row.group(1)] == [], event.__name__


def test_the_script_format_is_documented_step_by_step():
    section = TESTING_MD.split("## The scripted provider", 1)[1].split("\n## ", 1)[0]
    assert [k for k in sorted(STEP_KEYS | {"args", "raw_args", "kind", "id", "loop"}) if f'"{k}"' not in section] == []
    assert "[[replies]]" in section  # the TOML form


def public_names() -> set[str]:
    return {name for module in PUBLIC for name in importlib.import_module(module).__all__}


def test_every_type_the_testing_guide_names_is_public():
    # It named `TurnOutcome`, which no public module exports: a reader could not import it.
    named = set(re.findall(r"`([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)[`(.\[]", TESTING_MD))
    assert sorted(named - public_names()) == [], "docs/testing.md names these, which are not public"


def test_the_docs_name_the_test_kit_by_its_public_paths_only():
    # docs/storage.md imported StoreContract from crab.testing.store_contract, docs/api.md from
    # crab.testing; docs/providers.md named crab.testing.http_replay.ReplayServer.
    private = []
    for module in ("crab.testing", *PUBLIC[1:11]):
        public = set(importlib.import_module(module).__all__)
        for path in sorted((ROOT / "docs").glob("*.md")):
            for name in re.findall(rf"\b{re.escape(module)}\.([A-Za-z_]+)", path.read_text()):
                if name not in public:
                    private.append(f"{path.name}: {module}.{name}")
    assert private == [], "name these as crab.testing.NAME / crab.processes.NAME (their public paths)"


def test_api_md_names_tool_spec_fields_as_they_are():
    line = re.search(r"^- `ToolSpec` —.*(?:\n  .*)*", API_MD, re.M)
    assert line is not None
    for field in dataclasses.fields(crab.ToolSpec):
        assert f"`{field.name}`" in line.group(0), f"docs/api.md's ToolSpec line must call it `{field.name}`"
