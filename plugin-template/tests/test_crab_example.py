"""crab-example: the tool in a scripted model turn, its errors, the command, and the installed plugin.

`crab_agent` (a fixture of crab.testing) runs a real agent loop on a scripted provider: each
reply is a list of steps, here a tool call and then the model's final text.
"""

from __future__ import annotations

import json
from pathlib import Path

import crab

import crab_example


def test_the_model_calls_word_count(crab_agent):
    Path("notes.txt").write_text("one two three\nfour\n")  # crab_agent's workspace is the current folder
    harness = crab_agent(
        [[{"tool": "word_count", "args": {"path": "notes.txt"}}], [{"text": "4 words"}]],
        plugins={"example": crab_example},
    )
    assert harness.run("count the words in notes.txt").text == "4 words"
    [result] = harness.events_of(crab.events.ToolResultEvent)
    assert (result.name, result.content, result.is_error) == ("word_count", "4", False)
    assert harness.requests[-1].messages[-1].content == "4"  # what the model was sent back


def test_errors_go_back_to_the_model_as_error_results(crab_agent):
    Path("big.txt").write_text("word " * 100)
    harness = crab_agent(
        [
            [{"tool": "word_count", "args": {"path": "../outside.txt"}}],
            [{"tool": "word_count", "args": {"path": "big.txt"}}],
            [{"text": "done"}],
        ],
        plugins={"example": crab_example},
        config={"plugins.example.max_bytes": 10},
    )
    assert harness.run("count").text == "done"
    outside, big = harness.events_of(crab.events.ToolResultEvent)
    assert outside.is_error and "outside the workspace" in outside.content
    assert big.is_error and "more than max_bytes (10)" in big.content


def test_the_words_command(crab_agent):
    Path("notes.txt").write_text("a b c")
    harness = crab_agent([], plugins={"example": crab_example})
    harness.run("/words notes.txt")
    harness.run("/words")
    answer, usage = harness.events_of(crab.events.CommandOutput)
    assert (answer.text, answer.is_error) == ("notes.txt: 3 words", False)
    assert usage.is_error and usage.text == "usage: /words PATH"


def test_the_installed_plugin_loads(crab_cli):
    # Through the entry point in pyproject.toml: what `crab plugins list` shows a user.
    result = crab_cli("plugins", "list", "--json")
    assert result.exit_code == 0, result.stderr
    [mine] = [p for p in json.loads(result.stdout) if p["name"] == "example"]
    assert mine["status"] == "loaded", mine
