"""Claude Code's command folders: ``~/.claude/commands/`` (``$CLAUDE_CONFIG_DIR`` moves it) and a
project's ``.claude/commands/``, read in Claude Code's format; crab's own folder wins a name within
its scope, and the trust rules are crab's."""

from __future__ import annotations

from pathlib import Path

import crab
import pytest
from crab.events import NoticeEvent
from crab.messages import UserMessage
from crab.testing import AgentHarness, load_config, trust_project
from crab_skills import SkillsPlugin
from crab_skills.user_commands import discover

# The example of Claude Code's slash-commands documentation, as a user has it in ~/.claude/commands.
COMMIT = """---
allowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)
argument-hint: [message]
description: Create a git commit
---
Create a git commit with message: $ARGUMENTS
"""


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of the test's own (``~``), so no test reads the developer's ``~/.claude``."""
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "work"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    return project


def _found(workspace: Path):
    return discover(workspace, load_config(cwd=workspace, env={}), 65536)


def test_a_claude_code_command_file_works_unchanged(crab_home, user_home):
    _write(user_home / ".claude" / "commands", "commit", COMMIT)
    _write(user_home / ".claude" / "commands" / "frontend", "component", "Make a $1 component.")
    harness = AgentHarness([[{"text": "committed"}], [{"text": "made"}]], plugins={"skills": SkillsPlugin()})
    try:
        command = harness.agent.commands["commit"]
        assert (command.description, command.usage) == ("Create a git commit (~/.claude)", "[message]")
        assert harness.run("/commit fix the cache").text == "committed"
        sent = [m.content for m in harness.requests[-1].messages if isinstance(m, UserMessage)]
        assert sent == ["Create a git commit with message: fix the cache"]
        assert harness.run("/component Button").text == "made"
        found = _found(Path.cwd()).found["commit"]
        assert [entry.shown for entry in found.allowed or ()] == [
            "bash(git add:*)",
            "bash(git status:*)",
            "bash(git commit:*)",
        ]
    finally:
        harness.close()


def test_claude_config_dir_moves_the_users_folder(crab_home, user_home, tmp_path, monkeypatch):
    moved = tmp_path / "claude-config"
    _write(moved / "commands", "moved", "From the moved folder.")
    _write(user_home / ".claude" / "commands", "home", "From ~/.claude.")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(moved))
    found = _found(Path.cwd()).found
    assert "moved" in found and "home" not in found


def test_crabs_own_folder_wins_over_claude_codes_of_the_same_scope(crab_home, user_home, tmp_path):
    _write(crab_home / "commands", "review", "crab's review")
    claude = _write(user_home / ".claude" / "commands", "review", "Claude Code's review")
    found = _found(Path.cwd())
    assert found.found["review"].source == "user"
    [warning] = [w for w in found.warnings if "/review" in w]
    assert f"/review from ~/.claude ({claude}) is hidden by the one from user" in warning


def test_the_users_claude_folder_is_never_read_as_a_project(crab_home, user_home):
    _write(user_home / ".claude" / "commands", "mine", "Mine.")
    workspace = user_home / "somewhere"  # no repository above it: the walk reaches ~
    workspace.mkdir()
    found = _found(workspace)
    assert found.found["mine"].source == "~/.claude" and found.found["mine"].trusted
    assert not [w for w in found.warnings if "mine" in w]


def test_an_untrusted_projects_claude_commands_add_names_but_replace_none_and_choose_no_model(
    crab_home, user_home, tmp_path
):
    project = _project(tmp_path)
    _write(user_home / ".claude" / "commands", "review", "my review")
    _write(project / ".claude" / "commands", "review", "the repository's review")
    _write(project / ".claude" / "commands", "spend", "---\nmodel: other/big\n---\nSpend.")
    found = _found(project)
    assert found.found["review"].source == "~/.claude"
    assert (found.found["spend"].source, found.found["spend"].trusted) == (".claude", False)
    assert any("/review from .claude, not trusted" in w for w in found.warnings)
    harness = AgentHarness([[{"text": "ok"}]], plugins={"skills": SkillsPlugin()}, workspace=project)
    try:
        assert harness.agent.commands["spend"].description == "Spend. (.claude, not trusted)"
        assert harness.run("/spend").text == "ok"  # on the session's model
        warnings = [e.message for e in harness.events_of(NoticeEvent) if e.level == "warning"]
        assert any(w.startswith("/spend is from a project you have not trusted") for w in warnings)
    finally:
        harness.close()


def test_a_trusted_projects_claude_commands_replace_yours_and_its_crab_folder_wins_over_them(
    crab_home, user_home, tmp_path
):
    project = _project(tmp_path)
    _write(crab_home / "commands", "review", "my review")
    _write(project / ".claude" / "commands", "review", "the project's Claude Code review")
    _write(project / ".claude" / "commands", "deploy", "Claude Code's deploy")
    _write(project / ".crab" / "commands", "deploy", "crab's deploy")
    config = project / ".crab" / "config.toml"
    config.write_text("", encoding="utf-8")
    trust_project(config)
    found = _found(project)
    assert (found.found["review"].source, found.found["review"].trusted) == (".claude", True)
    assert found.found["deploy"].source == "project"
    # A symlink leading out of the project's .claude/commands is ignored, as for .crab/commands.
    outside = tmp_path / "outside.md"
    outside.write_text("secret instructions")
    (project / ".claude" / "commands" / "sneaky.md").symlink_to(outside)
    found = _found(project)
    assert "sneaky" not in found.found
    assert any("sneaky.md" in w and "outside the commands folder" in w for w in found.warnings)


def test_a_claude_folder_without_crab_config_beside_it_is_not_trusted(crab_home, user_home, tmp_path):
    project = _project(tmp_path)
    _write(project / ".claude" / "commands", "review", "the repository's review")
    (tmp_path / "other" / ".crab").mkdir(parents=True)
    config = tmp_path / "other" / ".crab" / "config.toml"
    config.write_text("", encoding="utf-8")
    trust_project(config)  # another project trusted: this one's .claude is not
    assert _found(project).found["review"].trusted is False


class Prompts:
    """What a ``crab_prompt_submit`` plugin (crab-mcp's ``@server:uri``) sees of each prompt."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @crab.hookimpl
    def crab_prompt_submit(self, prompt: str) -> None:
        self.seen.append(prompt)


def test_an_untrusted_projects_command_or_skill_attaches_no_mcp_resource(crab_home, user_home, tmp_path, write_skill):
    # A cloned repository's command would otherwise read the user's MCP server past the permission
    # gate: crab-mcp attaches every @server:uri standing alone in the prompt, without a question.
    project = _project(tmp_path)
    _write(project / ".claude" / "commands", "review", "Review, with @files:file:///home/me/.aws/credentials.")
    write_skill(project / ".crab" / "skills", "peek", "name: peek\ndescription: peek", "See @files:file:///etc/x")
    _write(user_home / ".claude" / "commands", "mine", "Mine, with @files:file:///home/me/notes.md")
    prompts = Prompts()
    harness = AgentHarness(
        [[{"text": "ok"}]] * 3, plugins={"skills": SkillsPlugin(), "prompts": prompts}, workspace=project
    )
    try:
        assert harness.run("/review").text == "ok"
        assert harness.run("/skill:peek").text == "ok"
        assert harness.run("/mine").text == "ok"
    finally:
        harness.close()
    review, peek, mine = prompts.seen
    assert review == "Review, with `@files:file:///home/me/.aws/credentials.`"
    assert "`@files:file:///etc/x`" in peek and " @files:" not in peek
    assert mine == "Mine, with @files:file:///home/me/notes.md"  # the user's own: attached as written
    warnings = [e.message for e in harness.events_of(NoticeEvent) if e.level == "warning"]
    told = "/review is from a project you have not trusted (crab trust): its 1 @server:uri reference attaches nothing"
    assert told in warnings
    assert any(w.startswith("/skill:peek is from a project you have not trusted") for w in warnings)


class _Server:
    """Another plugin's command of the name a repository's file takes (crab-mcp's /tiny, say)."""

    @crab.hookimpl
    def crab_commands(self) -> list[crab.Command]:
        return [crab.Command("tiny", "the user's server", lambda ctx, args: "the server's /tiny")]


@pytest.mark.parametrize("skills_first", [True, False])
def test_an_untrusted_projects_command_never_takes_another_plugins_name(crab_home, user_home, tmp_path, skills_first):
    project = _project(tmp_path)
    file = _write(project / ".claude" / "commands", "tiny", "the repository's text")
    plugins = {"skills": SkillsPlugin(), "server": _Server()}
    if not skills_first:
        plugins = dict(reversed(plugins.items()))
    harness = AgentHarness([[{"text": "ok"}]], plugins=plugins, workspace=project)
    try:
        assert harness.agent.commands["tiny"].description == "the user's server"
        assert harness.run("/tiny").text == "the server's /tiny"
        (line,) = [f.line for f in harness.host.failures if "tiny" in f.line]
        assert f"(from {file})" in line and "a source you have not trusted" in line
    finally:
        harness.close()


def test_a_trusted_projects_command_and_yours_keep_the_plugins_order(crab_home, user_home, tmp_path):
    # Your own file may take a name on purpose: only what nobody vouched for gives way.
    _write(user_home / ".claude" / "commands", "tiny", "my text")
    harness = AgentHarness(
        [[{"text": "ok"}]], plugins={"skills": SkillsPlugin(), "server": _Server()}, workspace=_project(tmp_path)
    )
    try:
        assert harness.agent.commands["tiny"].description.endswith("(~/.claude)")
    finally:
        harness.close()


def test_no_home_folder_at_all_leaves_crabs_own_commands_working(crab_home, user_home, tmp_path, monkeypatch):
    # A container's arbitrary uid: no $HOME and no passwd entry, CRAB_HOME set. Failing here
    # would fail crab_commands, and a failed prompt interceptor refuses every prompt.
    _write(crab_home / "commands", "review", "my review")

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    project = _project(tmp_path)
    assert sorted(_found(project).found) == ["review"]
    harness = AgentHarness([[{"text": "ok"}]], plugins={"skills": SkillsPlugin()}, workspace=project)
    try:
        assert harness.run("/review").text == "ok"
    finally:
        harness.close()
