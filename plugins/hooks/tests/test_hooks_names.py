"""crab's tools under Claude Code's names and argument shapes, both ways, and Claude Code's matchers."""

from __future__ import annotations

from pathlib import Path

import pytest
from crab_hooks.names import from_claude, to_claude
from crab_hooks.sources import Group

WS = Path("/work/space")


@pytest.mark.parametrize(
    ("tool", "crab_args", "name", "claude_args"),
    [
        ("bash", {"command": "ls", "timeout": 5}, "Bash", {"command": "ls", "timeout": 5000}),
        (
            "read",
            {"path": "a.py", "offset": 3, "limit": 10},
            "Read",
            {"file_path": "/work/space/a.py", "offset": 3, "limit": 10},
        ),
        ("write", {"path": "d/b.txt", "content": "hi"}, "Write", {"file_path": "/work/space/d/b.txt", "content": "hi"}),
        (
            "edit",
            {"path": "a.py", "edits": [{"old": "x", "new": "y"}]},
            "Edit",
            {"file_path": "/work/space/a.py", "old_string": "x", "new_string": "y", "replace_all": False},
        ),
        (
            "edit",
            {"path": "a.py", "edits": [{"old": "x", "new": "y"}, {"old": "p", "new": "q", "replace_all": True}]},
            "MultiEdit",
            {
                "file_path": "/work/space/a.py",
                "edits": [
                    {"old_string": "x", "new_string": "y", "replace_all": False},
                    {"old_string": "p", "new_string": "q", "replace_all": True},
                ],
            },
        ),
        (
            "grep",
            {"pattern": "TODO", "path": "src", "ignore_case": True, "context": 2, "files_only": True, "limit": 5},
            "Grep",
            {
                "pattern": "TODO",
                "path": "/work/space/src",
                "output_mode": "files_with_matches",
                "-i": True,
                "-C": 2,
                "head_limit": 5,
            },
        ),
        ("glob", {"pattern": "*.py", "path": "src"}, "Glob", {"pattern": "*.py", "path": "/work/space/src"}),
        ("ls", {"path": "src"}, "LS", {"path": "/work/space/src"}),
        (
            "web_fetch",
            {"url": "https://example.org", "start": 10},
            "WebFetch",
            {"url": "https://example.org", "start": 10},
        ),
        ("web_search", {"query": "crab"}, "WebSearch", {"query": "crab"}),
        ("mcp_github_issues", {"repo": "a/b"}, "mcp_github_issues", {"repo": "a/b"}),
    ],
)
def test_each_tool_maps_both_ways(tool, crab_args, name, claude_args):
    assert to_claude(tool, crab_args, WS) == (name, claude_args)
    assert from_claude(tool, claude_args, WS) == crab_args


def test_an_updated_input_replaces_the_whole_input():
    # the hook dropped -i and changed the pattern; crab's literal came in tool_input and went back
    updated = {"pattern": "y", "output_mode": "content", "literal": True}
    assert from_claude("grep", updated, WS) == {"pattern": "y", "literal": True}
    assert from_claude("web_fetch", {"url": "https://b"}, WS) == {"url": "https://b"}


def test_an_absolute_path_outside_the_workspace_is_left_for_the_tool_to_refuse():
    assert from_claude("read", {"file_path": "/etc/passwd"}, WS) == {"path": "/etc/passwd"}


def test_odd_arguments_never_raise():
    assert to_claude("edit", {"path": "a", "edits": 3}, WS) == ("Edit", {"file_path": "/work/space/a", "edits": []})
    assert to_claude("bash", {}, WS) == ("Bash", {"command": None})


@pytest.mark.parametrize(
    ("matcher", "names", "matches"),
    [
        ("", ("Bash", "bash"), True),
        ("*", ("Write", "write"), True),
        ("Bash", ("Bash", "bash"), True),
        ("bash", ("Bash", "bash"), True),
        ("Bash", ("Read", "read"), False),
        ("Edit|Write", ("Write", "write"), True),
        ("Edit|Write", ("MultiEdit", "edit"), False),  # a plain list matches exactly
        ("Notebook.*", ("NotebookEdit",), True),
        (".*Edit", ("MultiEdit", "edit"), True),
        ("mcp__.*", ("Bash", "bash"), False),
        ("Ba", ("Bash", "bash"), False),  # plain names never match a part
    ],
)
def test_matchers_follow_claude_codes_rules_on_either_name(matcher, names, matches):
    assert Group(matcher, ()).matches(names) is matches
