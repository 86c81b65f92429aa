"""Tab completion of ``@server:uri`` (crab-mcp's ``crab_completions``): the matching and its cap,
a template's fixed start, and against the tiny stdio server: its listed resources, masked, and
nothing from an untrusted project's server."""

from __future__ import annotations

from typing import Any

import crab_mcp
import pytest
from crab_mcp.completion import LIMIT, candidates, template_start

LISTED = {
    "tiny": [("tiny://note", "note (text/plain)"), ("tiny://nested/a", "a"), ("tiny://greeting/", "template")],
    "time": [("time://now", "now")],
    "empty": [],
}


@pytest.mark.parametrize(
    ("word", "found"),
    [
        ("@t", ["@time:", "@tiny:"]),  # servers with something to attach, by name
        ("@ti", ["@time:", "@tiny:"]),
        ("@tin", ["@tiny:"]),
        ("@e", []),  # lists nothing: nothing to complete to
        ("@", ["@time:", "@tiny:"]),
        ("@tiny:", ["@tiny:tiny://note", "@tiny:tiny://nested/a", "@tiny:tiny://greeting/"]),
        ("@tiny:tiny://n", ["@tiny:tiny://note", "@tiny:tiny://nested/a"]),
        ("@tiny:tiny://no", ["@tiny:tiny://note"]),
        ("@tiny:x", []),
        ("@nope:", []),  # a server this run does not have
        ("@tin:tiny://note", []),  # the start of a name is not the name
        ("tiny:", []),
        ("#tiny:", []),
    ],
)
def test_a_word_completes_to_servers_then_to_their_listed_uris(word: str, found: list[str]) -> None:
    assert [text for text, _ in candidates(word, LISTED)] == found


def test_the_descriptions_come_along_and_the_list_is_capped() -> None:
    assert candidates("@tiny:tiny://note", LISTED) == [("@tiny:tiny://note", "note (text/plain)")]
    assert candidates("@tim", LISTED) == [("@time:", "MCP server time: 1 resource to attach")]
    many = {"big": [(f"big://{n}", "") for n in range(500)]}
    assert len(candidates("@big:", many)) == LIMIT == 50
    assert len(candidates("@big:", many, limit=3)) == 3


@pytest.mark.parametrize(
    ("template", "start"),
    [
        ("tiny://greeting/{who}", "tiny://greeting/"),
        ("file:///{path}", "file:///"),
        ("demo://resource/{id}/text", "demo://resource/"),
        ("{scheme}://x", ""),
        ("noscheme/{x}", ""),
        ("plain://fixed", "plain://fixed"),
    ],
)
def test_a_templates_fixed_start_is_what_every_uri_of_it_starts_with(template: str, start: str) -> None:
    assert template_start(template) == start


# --- against the tiny server over stdio ------------------------------------------------------


def complete(h: Any, word: str) -> list[str]:
    found = crab_mcp.crab_completions(h.handle, word) or []
    return [text for text, _ in found]


def test_the_tiny_servers_listed_resources_complete_without_a_request(crab_agent, tiny_cmd) -> None:
    h = crab_agent(plugins={"mcp": crab_mcp}, config={"plugins.mcp.servers": {"tiny": tiny_cmd()}})
    assert complete(h, "@ti") == ["@tiny:"]
    assert complete(h, "@tiny:") == [
        "@tiny:tiny://note",
        "@tiny:tiny://pixel.png",
        "@tiny:tiny://data.bin",
        "@tiny:tiny://big",
        "@tiny:tiny://greeting/",  # the template's fixed start
    ]
    assert complete(h, "@tiny:tiny://b") == ["@tiny:tiny://big"]
    found = crab_mcp.crab_completions(h.handle, "@tiny:tiny://n")
    assert found == [("@tiny:tiny://note", "note (text/plain)")]
    assert crab_mcp.crab_completions(h.handle, "src/main.py") is None


def test_a_completion_is_masked_with_the_servers_own_secrets(crab_agent, tiny_cmd, monkeypatch) -> None:
    monkeypatch.setenv("TINY_WORD", "pixel.png")  # the server's ${VAR}: a value crab must never show
    server = {**tiny_cmd(), "env": {"WORD": "${TINY_WORD}"}}
    h = crab_agent(plugins={"mcp": crab_mcp}, config={"plugins.mcp.servers": {"tiny": server}})
    shown = complete(h, "@tiny:tiny://")
    assert "@tiny:tiny://[redacted]" in shown
    assert not any("pixel.png" in text for text in shown)


def test_an_untrusted_projects_server_never_completes(crab_agent, crab_config, tiny_cmd) -> None:
    crab_config({"plugins": {"mcp": {"servers": {"evil": tiny_cmd()}}}}, scope="project")  # not trusted
    h = crab_agent(plugins={"mcp": crab_mcp}, config={"plugins.mcp.servers.tiny": tiny_cmd()})
    assert complete(h, "@") == ["@tiny:"]
    assert complete(h, "@evil:") == []
