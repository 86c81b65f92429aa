"""Routing input to commands, the shell or the model."""

from __future__ import annotations

from crab._values.router import close_matches, route


def test_routes():
    assert route("/help").kind == "command"
    assert route("/handoff phase-2 the summary") == route("/handoff phase-2 the summary")
    r = route("/handoff phase-2 the summary")
    assert (r.name, r.args) == ("handoff", "phase-2 the summary")
    assert route("//etc/passwd is a path").text == "/etc/passwd is a path"
    assert route("//etc").kind == "model"
    assert route("!ls -la").kind == "shell" and route("!ls -la").text == "ls -la"
    assert route("hello /help").kind == "model"
    assert route("/ spaced").kind == "model"


def test_a_colon_after_the_name_passes_what_follows_as_the_first_argument():
    r = route("/skill:pdf report.pdf  now")
    assert (r.kind, r.name, r.args) == ("command", "skill", "pdf report.pdf  now")
    assert (route("/skill:pdf").name, route("/skill:pdf").args) == ("skill", "pdf")
    assert (route("/skill:").name, route("/skill:").args) == ("skill", "")
    assert route("/:x").name == ":x"  # no name before the colon: nothing to split
    assert route("//skill:pdf").kind == "model"


def test_close_matches():
    assert close_matches("hepl", ["help", "handoff", "quit"])[0] == "help"
    assert close_matches("zzz", ["help"]) == []
