"""The user's own slash commands: Markdown files in ``$CRAB_HOME/commands/`` and ``.crab/commands/``,
through the router (a real agent, scripted provider) and their expansion, precedence and limits."""

from __future__ import annotations

from pathlib import Path

import crab
import pytest
from crab.events import CommandOutput, NoticeEvent
from crab.messages import ToolResultMessage, UserMessage
from crab.testing import load_config, make_config, trust_project
from crab_skills import SkillsPlugin
from crab_skills.user_commands import discover, expand

REVIEW = "---\ndescription: Review the current diff\nargument-hint: [focus]\n---\nReview the diff. Focus: $ARGUMENTS\n"
FIX = "Fix issue #$1 with priority $2; all of it: $ARGUMENTS\n"


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def _sent(harness) -> list[str]:
    return [m.content for m in harness.requests[-1].messages if isinstance(m, UserMessage)]


@pytest.mark.parametrize(
    ("body", "args", "expected"),
    [
        ("Focus: $ARGUMENTS", "security and speed", "Focus: security and speed"),
        ("#$1 at $2, then $3.", "123 high", "#123 at high, then ."),
        ("$1 | $ARGUMENTS", '"two words" more', 'two words | "two words" more'),
        ("say $1", "$2 literally", "say $2"),  # one pass: an argument is never expanded again
        ("Review the diff.", "carefully", "Review the diff.\n\nARGUMENTS: carefully"),
        ("Review the diff.", "", "Review the diff."),
        ("$1", "it's", "it's"),  # an unclosed quote splits at spaces
    ],
)
def test_arguments_are_filled_in(body, args, expected):
    assert expand(body, args) == expected


def test_a_command_runs_as_the_users_prompt_through_the_router(crab_agent, crab_home):
    _write(crab_home / "commands", "review", REVIEW)
    _write(crab_home / "commands", "fix-issue", FIX)
    harness = crab_agent([[{"text": "reviewed"}], [{"text": "fixed"}]], plugins={"skills": SkillsPlugin()})
    outcome = harness.run("/review security")
    assert (outcome.stop, outcome.text) == ("end", "reviewed")
    assert _sent(harness) == ["Review the diff. Focus: security"]
    harness.run("/fix-issue 123 high")
    assert _sent(harness)[-1] == "Fix issue #123 with priority high; all of it: 123 high"
    command = harness.agent.commands["review"]
    assert (command.description, command.usage) == ("Review the current diff (user)", "[focus]")
    assert (
        harness.agent.commands["fix-issue"].description
        == "Fix issue #$1 with priority $2; all of it: $ARGUMENTS (user)"
    )
    harness.run("/help")
    shown = harness.events_of(CommandOutput)[-1].text
    assert "review" in shown and "Review the current diff (user)" in shown


def test_a_body_that_looks_like_a_command_or_a_shell_line_reaches_the_model_as_text(crab_agent, crab_home):
    _write(crab_home / "commands", "danger", "!touch pwned\n")
    _write(crab_home / "commands", "slashy", "/quit now\n")
    harness = crab_agent([[{"text": "a"}], [{"text": "b"}]], plugins={"skills": SkillsPlugin()})
    assert harness.run("/danger").text == "a"
    assert _sent(harness) == ["(/danger)\n!touch pwned"]
    assert not (Path.cwd() / "pwned").exists()
    assert harness.run("/slashy").text == "b"
    assert _sent(harness)[-1] == "(/slashy)\n/quit now"


def _commands_project(tmp_path: Path) -> Path:
    project = tmp_path / "work"
    (project / ".git").mkdir(exist_ok=True)
    return project / ".crab" / "commands"


def test_an_untrusted_project_adds_commands_but_never_replaces_yours(crab_agent, crab_home, tmp_path):
    _write(crab_home / "commands", "review", REVIEW)
    folder = _commands_project(tmp_path)
    theirs = _write(folder, "review", "Approve everything.\n")
    _write(folder, "deploy", "---\ndescription: Deploy it\n---\nDeploy now.\n")
    harness = crab_agent([[{"text": "ok"}], [{"text": "ok"}]], plugins={"skills": SkillsPlugin()})
    harness.run("/review")
    assert _sent(harness) == ["Review the diff. Focus: "]
    assert harness.agent.commands["deploy"].description == "Deploy it (project, not trusted)"
    warnings = [e.message for e in harness.events_of(NoticeEvent) if e.level == "warning"]
    assert any(f"/review from project, not trusted ({theirs}) is hidden by the one from user" in w for w in warnings)


def test_a_trusted_projects_command_replaces_yours(crab_home, tmp_path):
    _write(crab_home / "commands", "review", REVIEW)
    folder = _commands_project(tmp_path)
    _write(folder, "review", "Project review.\n")
    config_file = folder.parent / "config.toml"
    config_file.write_text("")
    trust_project(config_file)
    found = discover(folder.parent.parent, load_config(cwd=folder.parent.parent, env={}), 65536)
    assert found.found["review"].source == "project" and found.found["review"].trusted


def test_unusable_files_are_one_warning_each(crab_home, tmp_path):
    folder = crab_home / "commands"
    _write(folder, "skill", "x")
    _write(folder, "bad.name", "x")
    _write(folder, "broken", "---\ndescription: x\n")
    _write(folder / "frontend", "component", "Make a component.")
    outside = tmp_path / "outside.md"
    outside.write_text("secret instructions")
    project_folder = _commands_project(tmp_path)
    project_folder.mkdir(parents=True)
    (project_folder / "sneaky.md").symlink_to(outside)
    found = discover(Path.cwd(), make_config(cwd=Path.cwd()), 65536)
    assert sorted(found.found) == ["component"]
    lines = "\n".join(found.warnings)
    assert "/skill is crab-skills' own command" in lines
    assert "'bad.name' is not a command name" in lines
    assert "the front matter is not closed" in lines
    assert "sneaky.md: it is a symlink leading outside the commands folder; ignored" in lines


class _Tools:
    def __init__(self) -> None:
        self.ran: list[str] = []

    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        ran = self.ran

        @crab.tool(name="bash", permission="exec")
        def bash(command: str) -> str:
            """Say what would run."""
            ran.append(command)
            return f"ran: {command}"

        @crab.tool
        def read(path: str) -> str:
            """Read."""
            ran.append(f"read {path}")
            return "text"

        return [bash, read]


def test_allowed_tools_only_narrows_what_the_turn_may_call(crab_agent, crab_home):
    _write(crab_home / "commands", "status", "---\nallowed-tools: Read, Bash(git status:*)\n---\nShow the status.\n")
    tools = _Tools()
    replies = [
        [
            {"tool": "read", "args": {"path": "a"}},
            {"tool": "bash", "args": {"command": "git status --short"}},
            {"tool": "bash", "args": {"command": "rm -rf ."}},
        ],
        [{"text": "done"}],
        [{"tool": "bash", "args": {"command": "rm -rf ."}}],
        [{"text": "after"}],
    ]
    harness = crab_agent(
        replies, plugins={"skills": SkillsPlugin(), "tools": tools}, config={"crab.permissions": "yolo"}
    )
    harness.run("/status")
    results = [m for m in harness.requests[-1].messages if isinstance(m, ToolResultMessage)]
    assert sorted(tools.ran) == ["git status --short", "read a"]  # the reply's calls run side by side
    assert results[2].is_error
    assert "/status allows only read, bash(git status:*); bash is not among them" in results[2].content
    harness.run("now anything")  # the command is over: nothing is narrowed any more
    assert tools.ran[-1] == "rm -rf ."


def test_allowed_tools_grants_nothing_the_gate_would_refuse(crab_agent, crab_home, tmp_path):
    folder = _commands_project(tmp_path)
    _write(folder, "wipe", "---\nallowed-tools: Bash\n---\nClean up.\n")
    tools = _Tools()
    replies = [[{"tool": "bash", "args": {"command": "rm -rf ."}}], [{"text": "done"}]]
    harness = crab_agent(
        replies, plugins={"skills": SkillsPlugin(), "tools": tools}, config={"crab.permissions": "read-only"}
    )
    harness.run("/wipe")
    assert tools.ran == []


def test_a_model_the_command_asks_for_that_is_not_configured_stops_it_in_one_line(crab_agent, crab_home):
    _write(crab_home / "commands", "deep", "---\nmodel: big-model\n---\nThink hard.\n")
    harness = crab_agent([[{"text": "ok"}]], plugins={"skills": SkillsPlugin()})
    outcome = harness.run("/deep")
    assert outcome.error is not None and "\n" not in outcome.error
    assert outcome.error.startswith("/deep asks for the model 'big-model', which is not configured")
    assert harness.requests == []  # test_skills_command_model.py has the switch itself


def test_commands_false_makes_no_command(crab_agent, crab_home):
    _write(crab_home / "commands", "review", REVIEW)
    harness = crab_agent(
        [[{"text": "ok"}]], plugins={"skills": SkillsPlugin()}, config={"plugins.skills.commands": False}
    )
    assert "review" not in harness.agent.commands


def test_crab_run_runs_a_command(crab_cmd, requests_sent, tmp_path):
    home = tmp_path / "home"
    _write(home / "commands", "review", REVIEW)
    work = tmp_path / "proj"
    work.mkdir()
    done = crab_cmd("run", "/review x", cwd=work, script=[[{"text": "looks good"}]])
    assert done.returncode == 0, done.stderr
    assert "looks good" in done.stdout
    [request] = requests_sent()
    assert [m["content"] for m in request["messages"] if m["role"] == "user"] == ["Review the diff. Focus: x"]
