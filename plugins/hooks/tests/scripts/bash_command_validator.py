#!/usr/bin/env python3
"""A PreToolUse hook for Claude Code's Bash tool, to the contract of Claude Code's own example.

Written after ``examples/hooks/bash_command_validator_example.py`` in anthropics/claude-code
(linked from https://docs.anthropic.com/en/docs/claude-code/hooks): it reads the event from stdin,
looks only at ``tool_name == "Bash"`` and ``tool_input.command``, and for a command it rejects
prints one bullet per problem on stderr and exits 2, which blocks the call and shows stderr to
the model. Invalid JSON on stdin is exit 1, a non-blocking error. The rules are the example's:
``rg`` instead of ``grep`` and instead of ``find -name``.
"""

import json
import re
import sys

RULES = (
    (r"^grep\b(?!.*\|)", "Use 'rg' (ripgrep) instead of 'grep' for better performance and features"),
    (
        r"^find\s+\S+\s+-name\b",
        "Use 'rg --files | rg pattern' or 'rg --files -g pattern' instead of 'find -name' for better performance",
    ),
)


def problems(command: str) -> list[str]:
    return [message for pattern, message in RULES if re.search(pattern, command)]


def main() -> None:
    try:
        event = json.load(sys.stdin)
    except json.JSONDecodeError as exc:
        print(f"Error: Invalid JSON input: {exc}", file=sys.stderr)
        sys.exit(1)
    if event.get("tool_name", "") != "Bash":
        sys.exit(0)
    command = event.get("tool_input", {}).get("command", "")
    found = problems(command) if command else []
    if found:
        for message in found:
            print(f"• {message}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
