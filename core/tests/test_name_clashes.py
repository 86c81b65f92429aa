"""Two plugins offering one tool name: the user's order, crab's or the program's own word decides,
never which plugin sorts first; with no one's word, crab's own plugin keeps it over one that is
only installed, else neither is used and one line says how to choose.

Real entry points (core's fake plugins ``good`` and ``duplicate`` both register ``echo``), loaded
by a real plugin host; ``build_registry`` is also checked on its own for the rank classes."""

from __future__ import annotations

import sys
import types
from importlib.metadata import EntryPoint
from pathlib import Path

import crab
import pytest
from crab._assembly.function_tools import PLUGIN, FunctionTools
from crab._assembly.plugin_choice import choose_plugins
from crab._assembly.registries import Registries, build_registry
from crab._host.plugin_host import CORE, INSTALLED, LISTED, PROGRAM, PluginHost, Rank
from crab.testing import make_config

FAKES = Path(__file__).parent / "fake_plugins"
GOOD = "Repeat the text."
LOUD = "Repeat the text, louder."


@pytest.fixture(autouse=True)
def fakes_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FAKES))
    for module in ("crab_fake_good", "crab_fake_duplicate"):
        monkeypatch.delitem(sys.modules, module, raising=False)


def host(config=None, cli=None, env=None) -> PluginHost:
    made = PluginHost(config or make_config(), strict=False)
    made.registries = Registries(made)
    points = [EntryPoint("duplicate", "crab_fake_duplicate", "crab"), EntryPoint("good", "crab_fake_good", "crab")]
    made.load_entry_points(choose_plugins(made.config, cli, env or {}), points)
    return made


def echo_owner(made: PluginHost) -> tuple[str | None, str | None]:
    echo = made.registry("tools").get("echo")
    return (echo.plugin, echo.description) if echo is not None else (None, None)


def test_installed_only_a_clash_leaves_the_name_out_for_both_with_one_line():
    # "duplicate" sorts before "good": before the fix it silently took the name.
    made = host()
    assert echo_owner(made) == (None, None)
    (line,) = [f.line for f in made.failures]
    assert line == (
        "plugin duplicate failed: its tool 'echo' is also registered by plugin 'good', so neither is used; list "
        "both in [plugins] enabled (which then names every plugin that loads), the one that should win first, or "
        "disable one (crab plugins disable duplicate or crab plugins disable good)"
    )
    assert made.records["good"].faults == made.records["duplicate"].faults == [line.split(": ", 1)[1]]
    assert made.records["good"].status == made.records["duplicate"].status == "loaded"  # only the name is lost


@pytest.mark.parametrize(
    ("how", "winner"),
    [
        ({"cli": ["good", "duplicate"]}, ("good", GOOD)),
        ({"cli": ["duplicate", "good"]}, ("duplicate", LOUD)),
        ({"env": {"CRAB_PLUGINS": "good,duplicate"}}, ("good", GOOD)),
        ({"config": make_config({"plugins.enabled": ["good", "duplicate"]})}, ("good", GOOD)),
        ({"config": make_config({"plugins.enabled": ["duplicate", "good"]})}, ("duplicate", LOUD)),
    ],
)
def test_the_users_order_settles_it_and_the_loser_is_told_where(how, winner):
    made = host(**how)
    assert echo_owner(made) == winner
    loser = "duplicate" if winner[0] == "good" else "good"
    (line,) = [f.line for f in made.failures]
    source = "--plugins" if "cli" in how else "CRAB_PLUGINS" if "env" in how else "[plugins] enabled"
    assert line.startswith(f"plugin {loser} failed: its tool 'echo' was left out because plugin '{winner[0]}'")
    assert f"comes first in {source}; list {loser} before {winner[0]} there" in line


def test_the_programs_own_tool_wins_with_a_notice():
    @crab.tool(name="echo")
    def mine(text: str) -> str:
        """The program's echo."""
        return text

    made = host(cli=["good"])
    made.load_objects({PLUGIN: FunctionTools([mine])})
    assert echo_owner(made) == (PLUGIN, "The program's echo.")
    assert [f.line for f in made.failures] == [
        "plugin good failed: its tool 'echo' was left out: the program's own tool (program-tools) of that name "
        "takes its place"
    ]


def item(name: str, override: bool = False, **more: object) -> object:
    return types.SimpleNamespace(name=name, override=override, **more)


def test_rank_classes_and_override():
    a, b = item("x"), item("x")
    contributions = {"core": [a], "p": [b]}
    table, faults = build_registry("commands", contributions, ["core", "p"], {"core": Rank(CORE)})
    assert table["x"] is a and faults[0].plugins == ("p",) and "crab's own command" in faults[0].reason
    table, faults = build_registry("tools", {"i": [a], "prog": [b]}, ["i", "prog"], {"prog": Rank(PROGRAM)})
    assert table["x"] is b and faults[0].plugins == ("i",)
    forced = item("x", override=True)
    table, faults = build_registry("tools", {"i": [a], "j": [forced]}, ["i", "j"], {})
    assert table["x"] is forced and faults == []  # the plugin says it replaces the other on purpose
    three = {"i": [a], "j": [b], "k": [item("x")]}
    table, faults = build_registry("tools", three, ["i", "j", "k"], {n: Rank(INSTALLED) for n in three})
    assert "x" not in table and [f.plugins for f in faults] == [("i", "j", "k")]
    listed = {n: Rank(LISTED, "--plugins") for n in three}
    table, faults = build_registry("tools", three, ["i", "j", "k"], listed)
    assert table["x"] is a and [f.plugins for f in faults] == [("j",), ("k",)]


@pytest.mark.parametrize("order", [["third", "own"], ["own", "third"]])
def test_installed_only_crab_s_own_plugin_keeps_the_name_in_either_order(order):
    # Before, a stray package's tool named like one crab ships left the name out for both.
    mine, theirs = item("read"), item("read")
    table, faults = build_registry("tools", {"own": [mine], "third": [theirs]}, order, {}, lambda p: p == "own")
    assert table["read"] is mine
    (fault,) = faults
    assert fault.plugins == ("third",)
    assert fault.reason == (
        "its tool 'read' was left out: plugin 'own', one of crab's own, registers that name, and a plugin that "
        "is only installed never takes a name from it; list third before own in [plugins] enabled to use this "
        "one, or disable one of them (crab plugins disable third or own)"
    )
    both = {"own": [mine], "also-own": [item("read")]}
    table, faults = build_registry("tools", both, ["also-own", "own"], {}, lambda p: True)
    assert "read" not in table and [f.plugins for f in faults] == [("also-own", "own")]  # nobody's word: neither
    listed = {"own": Rank(LISTED, "--plugins"), "third": Rank(LISTED, "--plugins")}
    table, _ = build_registry("tools", {"own": [mine], "third": [theirs]}, ["third", "own"], listed, lambda p: True)
    assert table["read"] is theirs  # the user's order is a stronger word than who made the plugin


def _dist(site: Path, name: str, author: str | None) -> None:
    folder = site / f"{name.replace('-', '_')}-0.0.1.dist-info"
    folder.mkdir(parents=True)
    header = f"Author: {author}\n" if author is not None else ""
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n{header}")


def test_crab_s_own_distributions_are_those_by_crab_core_s_authors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from importlib import metadata

    from crab._assembly.registries import crab_own

    authors = metadata.distribution("crab-core").metadata["Author"]
    _dist(tmp_path, "crab-made-here", authors)
    _dist(tmp_path, "crab-made-elsewhere", "someone else")
    _dist(tmp_path, "crab-no-author", None)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert crab_own("crab-made-here") and crab_own("crab_made_here")
    assert not crab_own("crab-made-elsewhere") and not crab_own("crab-no-author")
    assert not crab_own("crab-not-installed") and not crab_own("crab-core")


def test_a_programs_plugin_list_is_named_as_such(monkeypatch: pytest.MonkeyPatch):
    from crab._assembly.choosing import build_host
    from crab._host import plugin_host

    points = [EntryPoint("duplicate", "crab_fake_duplicate", "crab"), EntryPoint("good", "crab_fake_good", "crab")]
    monkeypatch.setattr(plugin_host, "discover_entry_points", lambda: points)
    made = build_host(make_config(), ["good", "duplicate"], validate=False, strict=False, environment=False)
    assert echo_owner(made) == ("good", GOOD)
    (line,) = [f.line for f in made.failures]
    assert "comes first in the program's plugins list; list duplicate before good there" in line
    by_flag = build_host(make_config(), "duplicate,good", validate=False, strict=False, environment=False)
    assert echo_owner(by_flag) == ("duplicate", LOUD)
    assert "comes first in --plugins" in by_flag.failures[0].line


def test_a_command_that_gives_way_never_takes_a_name_whatever_the_order():
    # An untrusted project's command file (crab-skills) listed first must not take /tiny from the
    # user's MCP server; on its own it keeps its name.
    repo = item("tiny", gives_way=True, file="/repo/.claude/commands/tiny.md")
    mcp = item("tiny")
    listed = {"skills": Rank(LISTED, "[plugins] enabled"), "mcp": Rank(LISTED, "[plugins] enabled")}
    for order in (["skills", "mcp"], ["mcp", "skills"]):
        table, faults = build_registry("commands", {"skills": [repo], "mcp": [mcp]}, order, listed)
        assert table["tiny"] is mcp
        assert [f.plugins for f in faults] == [("skills",)]
        assert faults[0].reason == (
            "its command 'tiny' (from /repo/.claude/commands/tiny.md) was left out: it comes from a source you "
            "have not trusted, and plugin 'mcp' registers that name"
        )
    forced = item("tiny", gives_way=True, override=True)
    table, _ = build_registry("commands", {"skills": [forced], "mcp": [mcp]}, ["skills", "mcp"], listed)
    assert table["tiny"] is mcp  # override does not lift it
    table, faults = build_registry("commands", {"skills": [repo]}, ["skills"], listed)
    assert table["tiny"] is repo and faults == []


def test_a_command_file_named_like_crab_s_own_says_to_rename_the_file():
    own, mine = item("help"), item("help", file="/home/u/.crab/commands/help.md")
    _, faults = build_registry("commands", {"core": [own], "skills": [mine]}, ["core", "skills"], {"core": Rank(CORE)})
    assert faults[0].reason == (
        "its command 'help' (from /home/u/.crab/commands/help.md) was left out: crab's own command has that "
        "name; rename the file"
    )
