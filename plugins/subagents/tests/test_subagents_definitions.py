"""Agent files: crab's and Claude Code's format, precedence, and what an untrusted project may do."""

from __future__ import annotations

from pathlib import Path

from crab_subagents.definitions import GENERAL, discover, read_agent, tool_names


def test_claude_code_agent_files_are_read_with_their_tool_names_mapped(tmp_path: Path, write_agent) -> None:
    file = write_agent(
        tmp_path,
        "reviewer",
        "name: code-reviewer\ndescription: Reviews a diff\ntools: Read, Grep, Glob, Bash(git diff:*), WebFetch\n"
        "model: sonnet\nmaxTurns: 7\npermissionMode: plan",
        "You review code.\n",
    )
    agent, notes = read_agent(file, "user")
    assert agent.name == "code-reviewer"
    assert agent.tools == ("read", "grep", "glob", "web_fetch")  # Bash(git diff:*) is not widened to bash
    assert agent.model is None  # a Claude alias: the parent's model
    assert agent.max_iterations == 7
    assert agent.read_only  # plan mode
    assert agent.instructions == "You review code."
    assert notes == ["tool rules crab cannot express were left out: Bash(git diff:*)"]


def test_crab_agent_files_take_lists_models_and_caps(tmp_path: Path, write_agent) -> None:
    front = "name: x\ndescription: d\ntools: [read, grep]\nmodel: mock/x.json\nmax_iterations: 3"
    file = write_agent(tmp_path, "x", front)
    agent, notes = read_agent(file, "user")
    assert (agent.tools, agent.model, agent.max_iterations, agent.read_only, notes) == (
        ("read", "grep"),
        "mock/x.json",
        3,
        False,
        [],
    )
    assert tool_names(["*"]) == (None, [])


def test_a_mode_wider_than_the_parents_is_ignored_with_a_note(tmp_path: Path, write_agent) -> None:
    file = write_agent(tmp_path, "y", "name: y\ndescription: d\npermissionMode: bypassPermissions")
    agent, notes = read_agent(file, "user")
    assert not agent.read_only
    assert "never more" in notes[0]


def test_an_untrusted_project_adds_agents_but_never_replaces_widens_or_routes(
    crab_home: Path, crab_config, write_agent
) -> None:
    write_agent(crab_home / "agents", "explore", "name: explore\ndescription: mine\ntools: read")
    project = Path.cwd() / ".crab" / "agents"
    write_agent(project, "explore", "name: explore\ndescription: the repo's\ntools: bash, write")
    write_agent(project, "general", "name: general\ndescription: the repo's general")
    write_agent(project, "builder", "name: builder\ndescription: builds\ntools: bash, write, read\nmodel: openai/o3")
    config = crab_config({"crab": {"max_iterations": 5}})  # a project config, not trusted
    catalog = discover(Path.cwd(), config)
    assert catalog.agents["explore"].description == "mine"
    assert catalog.agents["general"] is GENERAL
    builder = catalog.agents["builder"]
    assert builder.read_only and builder.model is None and not builder.trusted
    assert any("explore" in w and "left out" in w for w in catalog.warnings)
    assert any("general" in w and "left out" in w for w in catalog.warnings)
    assert any("model ignored" in w for w in catalog.warnings)


def test_a_trusted_project_replaces_the_users_agent(crab_home: Path, crab_config, write_agent) -> None:
    from crab.testing import load_config
    from crab.testing import trust_project as trust

    write_agent(crab_home / "agents", "explore", "name: explore\ndescription: mine")
    write_agent(Path.cwd() / ".crab" / "agents", "explore", "name: explore\ndescription: the repo's\ntools: bash")
    crab_config({"crab": {"max_iterations": 5}})
    trust(Path.cwd() / ".crab" / "config.toml")
    agent = discover(Path.cwd(), load_config()).agents["explore"]
    assert (agent.description, agent.tools, agent.read_only, agent.trusted) == ("the repo's", ("bash",), False, True)


def test_a_broken_file_is_one_warning_and_the_rest_still_load(crab_home: Path, crab_config, write_agent) -> None:
    folder = crab_home / "agents"
    write_agent(folder, "ok", "name: ok\ndescription: fine")
    (folder / "bad.md").write_text("no front matter", encoding="utf-8")
    write_agent(folder, "nodesc", "name: nodesc")
    catalog = discover(Path.cwd(), crab_config({}, scope="user"))
    assert set(catalog.agents) == {"ok", "general"}
    assert len(catalog.warnings) == 2 and all("ignored" in w for w in catalog.warnings)
