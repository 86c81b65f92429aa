"""Context benchmark: tool-schema tokens sent across a scripted 10-turn conversation with 20 tools,
the progressive tool view (every tool as its constant stub: name, first sentence, the parameters'
shape) against full schemas on every call; and the first request of a real setup, core with
crab-tools-basic: its system prompt (core's part and the coding guidance) and the seven tool
stubs (budget: ``FIRST_REQUEST_BUDGET`` tokens, which ``tests/test_system_prompt_snapshot.py``
holds).

Schema tokens are a proxy: what a session bills, with the provider's prompt cache, is
``bench/cost.py``'s (issue 38), and that is what chose the default view. The 20 tools have schemas
shaped like real agent tools (files, shell, git, web, issues, SQL…); the conversation uses five
of them. Tokens are crab's estimate (characters / 4, the one the token budget uses). Both views
send the same list on every request of a session (the prefix providers cache), so the tokens
sent grow with the number of calls only.

    python bench/context.py
"""

from __future__ import annotations

import tempfile
import types
from pathlib import Path
from typing import Any

import crab
from crab._contracts.providers import ModelRequest
from crab._values.budget import raw_tokens, schema_tokens
from crab.testing import AgentHarness

P = tuple[str, str, str, bool]  # name, JSON type, description, required

TOOLS: list[tuple[str, str, list[P]]] = [
    (
        "read",
        "Read a text file with line numbers. Long files are cut; ask for a range with offset and limit.",
        [
            ("path", "string", "file path, relative to the workspace", True),
            ("offset", "integer", "first line to show (1-based)", False),
            ("limit", "integer", "number of lines to show", False),
        ],
    ),
    (
        "write",
        "Create a file or replace its content; parent folders are created.",
        [
            ("path", "string", "file path, relative to the workspace", True),
            ("content", "string", "the complete new content", True),
        ],
    ),
    (
        "edit",
        "Replace exact text in a file; each old text must appear exactly once.",
        [
            ("path", "string", "file path", True),
            ("edits", "array", "list of {old, new} replacements applied in order", True),
        ],
    ),
    (
        "bash",
        "Run a shell command in the workspace; returns exit code and combined output.",
        [
            ("command", "string", "the command line, run with bash -c", True),
            ("timeout", "number", "seconds before the command is stopped", False),
        ],
    ),
    (
        "glob",
        "Find files by name pattern, newest first, ignoring what .gitignore ignores.",
        [("pattern", "string", "glob such as **/*.py", True), ("path", "string", "folder to search", False)],
    ),
    (
        "grep",
        "Search file contents for a regular expression; prints path:line:text.",
        [
            ("pattern", "string", "regular expression", True),
            ("path", "string", "file or folder", False),
            ("glob", "string", "only files matching this glob", False),
            ("ignore_case", "boolean", "match without regard to case", False),
            ("context", "integer", "lines of context around each match", False),
        ],
    ),
    ("ls", "List a folder: sub-folders first, then files.", [("path", "string", "folder to list", False)]),
    (
        "web_fetch",
        "Fetch a web page and return its readable text (HTML converted to Markdown).",
        [("url", "string", "http or https URL", True), ("max_chars", "integer", "cut the text here", False)],
    ),
    (
        "web_search",
        "Search the web; returns titles, URLs and snippets.",
        [("query", "string", "search words", True), ("count", "integer", "results wanted (1-20)", False)],
    ),
    ("git_status", "Show the working tree status: staged, unstaged and untracked files.", []),
    (
        "git_diff",
        "Show changes as a unified diff.",
        [
            ("staged", "boolean", "diff of the index instead of the working tree", False),
            ("path", "string", "limit to this path", False),
        ],
    ),
    (
        "git_commit",
        "Commit staged changes with a message.",
        [
            ("message", "string", "commit message: a summary line, a blank line, then the why", True),
            ("all", "boolean", "stage every tracked change first", False),
        ],
    ),
    (
        "issue_create",
        "Open an issue in the project's tracker.",
        [
            ("title", "string", "one-line title", True),
            ("body", "string", "Markdown description", True),
            ("labels", "array", "label names", False),
            ("assignees", "array", "user names", False),
        ],
    ),
    (
        "issue_search",
        "Search issues and pull requests of the project.",
        [
            ("query", "string", "search words and qualifiers like is:open", True),
            ("limit", "integer", "most results", False),
        ],
    ),
    (
        "sql_query",
        "Run a read-only SQL query on the project's database and return rows as a table.",
        [
            ("sql", "string", "one SELECT statement", True),
            ("params", "array", "positional parameters", False),
            ("max_rows", "integer", "most rows returned", False),
        ],
    ),
    (
        "http_request",
        "Send an HTTP request to a service of the project (localhost only).",
        [
            ("method", "string", "GET, POST, PUT, PATCH or DELETE", True),
            ("url", "string", "URL", True),
            ("headers", "object", "extra request headers", False),
            ("body", "string", "request body", False),
        ],
    ),
    (
        "todo",
        "Keep the task list of this session: add, update or complete items.",
        [
            ("action", "string", "add, update, complete or list", True),
            ("id", "integer", "item id", False),
            ("text", "string", "item text", False),
        ],
    ),
    (
        "ask_user",
        "Ask the user a question and wait for the answer.",
        [("question", "string", "what to ask", True), ("choices", "array", "answers to offer", False)],
    ),
    (
        "schedule",
        "Schedule a job: a reminder or an agent task at a time or on a cron rule.",
        [
            ("when", "string", "ISO time or cron rule", True),
            ("task", "string", "what to do", True),
            ("channel", "string", "where to deliver the result", False),
        ],
    ),
    (
        "send_message",
        "Send a message to a chat channel the user configured.",
        [("channel", "string", "channel name", True), ("text", "string", "message text (Markdown)", True)],
    ),
]


NOTES = (
    "\n\nUse it when the task needs it; prefer the narrowest call that answers the question. "
    "Results longer than the output limit are cut with a note saying how to ask for the rest. "
    "Errors come back as a result that says what went wrong and how to call the tool correctly."
)


def make_tool(name: str, description: str, params: list[P]) -> crab.Tool:
    description += NOTES
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            p: ({"type": t, "description": d} | ({"items": {"type": "object"}} if t == "array" else {}))
            for p, t, d, _ in params
        },
        "required": [p for p, _, _, required in params if required],
        "additionalProperties": False,
    }
    return crab.Tool(name, description, schema, lambda args, ctx: f"{name} ok")


PLUGIN = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [make_tool(*t) for t in TOOLS]))

SCRIPT: list[list[dict[str, Any]]] = [
    [{"tool": "read", "args": {"path": "README.md"}}], [{"text": "It is a CLI."}],
    [{"text": "Searching with $grep."}, {"tool": "grep", "args": {"pattern": "def main"}}], [{"text": "In cli.py."}],
    [{"tool": "read", "args": {"path": "cli.py"}}], [{"text": "It parses arguments."}],
    [{"text": "Running them with $bash."}, {"tool": "bash", "args": {"command": "pytest -q"}}], [{"text": "2 fail."}],
    [{"tool": "read", "args": {"path": "test_cli.py"}}], [{"text": "They expect --verbose."}],
    [{"text": "Changing it with $edit."}, {"tool": "edit", "args": {"path": "cli.py", "edits": []}}], [{"text": "Done."}],
    [{"tool": "bash", "args": {"command": "pytest -q"}}], [{"text": "All pass."}],
    [{"tool": "git_diff", "args": {}}], [{"text": "The diff is small."}],
    [{"text": "Nothing else to do."}],
    [{"tool": "grep", "args": {"pattern": "verbose"}}], [{"text": "Only in cli.py."}],
]  # fmt: skip
QUESTIONS = [
    "what is this project?", "where is main?", "what does cli.py do?", "run the tests", "why do they fail?",
    "fix it", "run them again", "show me the diff", "anything else?", "where else is verbose used?",
]  # fmt: skip


def converse(view: str, workspace: Path) -> list[ModelRequest]:
    config = {"crab.tool_view": view, "crab.permissions": "yolo"}
    h = AgentHarness(SCRIPT, plugins={"bench": PLUGIN}, config=config, workspace=workspace)
    try:
        for question in QUESTIONS:
            outcome = h.run(question)
            assert outcome.stop == "end", outcome.error
        return list(h.requests)
    finally:
        h.close()


FIRST_REQUEST_BUDGET = 1350  # tests/test_system_prompt_snapshot.py's
SHOWN_WORKSPACE = "/home/user/project"
"""The workspace path the figures count (the snapshot's), so a temporary folder's length does not."""


def first_request(workspace: Path) -> dict[str, int]:
    """Estimated tokens of the first request with crab-tools-basic, by part (no instruction files)."""
    import crab_tools_basic
    from crab_tools_basic.guidance import GUIDANCE

    h = AgentHarness([[{"text": "ok"}]], plugins={"tools-basic": crab_tools_basic}, workspace=workspace)
    try:
        h.run("hello")
        request = h.requests[0]
    finally:
        h.close()
    system = request.system.replace(str(workspace), SHOWN_WORKSPACE)
    guidance = raw_tokens(len(GUIDANCE))
    prompt = raw_tokens(len(system))
    stubs = schema_tokens(request.tools)
    return {"core": prompt - guidance, "guidance": guidance, "stubs": stubs, "total": prompt + stubs}


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:  # a workspace without instruction files
        full = converse("full", Path(folder))
        progressive = converse("progressive", Path(folder))
        first = first_request(Path(folder))
    assert len(full) == len(progressive) == len(SCRIPT)
    sent_full = sum(schema_tokens(r.tools) for r in full)
    sent_progressive = sum(schema_tokens(r.tools) for r in progressive)
    prompt_full = sum(raw_tokens(len(r.system)) for r in full)
    prompt_progressive = sum(raw_tokens(len(r.system)) for r in progressive)
    print(f"20 tools, 10 turns, {len(full)} model calls (full) / {len(progressive)} (progressive)")
    print(f"{'':<28}{'full':>10}{'progressive':>14}{'fewer':>8}")
    print(
        f"{'tool-schema tokens sent':<28}{sent_full:>10,}{sent_progressive:>14,}{1 - sent_progressive / sent_full:>8.0%}"
    )
    total_full, total_progressive = sent_full + prompt_full, sent_progressive + prompt_progressive
    print(
        f"{'schemas + system prompt':<28}{total_full:>10,}{total_progressive:>14,}{1 - total_progressive / total_full:>8.0%}"
    )
    print(
        f"{'first request, schemas':<28}{schema_tokens(full[0].tools):>10,}{schema_tokens(progressive[0].tools):>14,}"
    )
    print()
    print(
        f"first request with crab-tools-basic: {first['total']:,} tokens of {FIRST_REQUEST_BUDGET:,} "
        f"(core's prompt {first['core']:,}, coding guidance {first['guidance']:,}, 7 tool stubs {first['stubs']:,})"
    )


if __name__ == "__main__":
    main()
