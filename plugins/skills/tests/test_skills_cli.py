"""crab-skills through the real ``crab`` command (core, this plugin, a scripted provider and a
plugin shipping skills): /skill:NAME end to end, ``crab skills list``/``show``, and what an
untrusted repository's config and skills can and cannot do."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path, write_skill) -> Path:
    home = tmp_path / "home"
    write_skill(home / "skills", "pdf", "name: pdf\ndescription: Extract text from PDF files.", "PDF-BODY steps")
    write_skill(tmp_path / "shipped", "lint", "name: lint\ndescription: Lint with the house rules.", "LINT-BODY")
    return home


@pytest.fixture
def work(tmp_path: Path, write_skill) -> Path:
    work = tmp_path / "work"
    write_skill(work / ".crab" / "skills", "deploy", "name: deploy\ndescription: Deploy the app.", "DEPLOY-BODY")
    return work


def test_slash_skill_end_to_end(crab_cmd, requests_sent, home, work):
    result = crab_cmd(
        "run", "--provider", "scripted", "/skill:pdf summarize a.pdf", cwd=work, script=[[{"text": "done!"}]]
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done!"
    [request] = requests_sent()
    assert "- pdf: Extract text from PDF files." in request["system"]
    assert "- lint: Lint with the house rules." in request["system"]
    assert "- deploy (from this repository, not trusted): Deploy the app." in request["system"]
    assert "PDF-BODY" not in request["system"]
    [user] = request["messages"]
    assert user["role"] == "user"
    assert user["content"].startswith('<skill name="pdf" source="user"')
    assert "PDF-BODY steps" in user["content"] and user["content"].endswith("summarize a.pdf")


def test_slash_skill_with_an_unknown_name_exits_1_without_a_model_call(crab_cmd, requests_sent, home, work):
    result = crab_cmd("run", "--provider", "scripted", "/skill:pfd", cwd=work)
    assert result.returncode == 1
    assert "no skill named 'pfd'. Did you mean: pdf? Type /skill to list them." in result.stderr
    assert requests_sent() == []


def test_the_model_loads_a_skill_through_the_tool(crab_cmd, requests_sent, home, work):
    script = [[{"tool": "skill", "args": {"name": "lint"}}], [{"text": "linted"}]]
    result = crab_cmd("run", "--provider", "scripted", "lint this", cwd=work, script=script)
    assert result.returncode == 0, result.stderr
    tool_result = requests_sent()[1]["messages"][-1]
    assert "LINT-BODY" in tool_result["content"] and "source: plugin shipper" in tool_result["content"]


def test_skills_list_shows_name_source_and_description(crab_cmd, home, work):
    result = crab_cmd("skills", "list", cwd=work)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAME", "SOURCE", "DESCRIPTION"]
    rows = {line.split()[0]: " ".join(line.split()[1:]) for line in lines[1:]}
    assert rows == {
        "pdf": "user Extract text from PDF files.",
        "lint": "plugin shipper Lint with the house rules.",
        "deploy": "project (not trusted) Deploy the app.",
    }
    assert result.stderr == ""


def test_skills_list_json_and_show(crab_cmd, home, work):
    import json

    listed = json.loads(crab_cmd("skills", "list", "--json", cwd=work).stdout)
    assert [(s["name"], s["source"]) for s in listed] == [
        ("pdf", "user"),
        ("lint", "plugin shipper"),
        ("deploy", "project (not trusted)"),
    ]
    shown = crab_cmd("skills", "show", "deploy", cwd=work)
    assert shown.returncode == 0 and "DEPLOY-BODY" in shown.stdout
    assert "it comes from the repository" in shown.stdout
    missing = crab_cmd("skills", "show", "deplyo", cwd=work)
    assert missing.returncode == 1
    assert missing.stderr == "crab: no skill named 'deplyo'. Did you mean: deploy? See `crab skills list`.\n"


def test_a_malformed_skill_is_one_warning_line_and_the_rest_work(crab_cmd, home, work):
    bad = work / ".crab" / "skills" / "broken" / "SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\nname broken\n---\n")
    result = crab_cmd("skills", "list", cwd=work)
    assert result.returncode == 0
    assert result.stderr == f"warning: skills: {bad}: line 2: expected `key: value`, found 'name broken'\n"
    assert "deploy" in result.stdout
    run = crab_cmd("run", "--provider", "scripted", "hi", cwd=work)
    assert run.returncode == 0
    assert run.stderr.count(f"{bad}: line 2") == 1 and "Traceback" not in run.stderr


def test_an_untrusted_project_cannot_add_paths_or_switch_its_skills_on(crab_cmd, home, work, tmp_path, write_skill):
    write_skill(tmp_path / "planted", "planted", "name: planted\ndescription: from the repository's config")
    (home / "config.toml").write_text("[plugins.skills]\nproject = false\n")
    config = work / ".crab" / "config.toml"
    config.write_text(f'[plugins.skills]\npaths = ["{tmp_path / "planted"}"]\nproject = true\n')
    result = crab_cmd("skills", "list", cwd=work)
    assert result.returncode == 0
    assert "planted" not in result.stdout and "deploy" not in result.stdout
    assert "plugins.skills.paths, plugins.skills.project" in result.stderr
    assert f"crab trust {work}" in result.stderr
    assert crab_cmd("trust", cwd=work).returncode == 0
    trusted = crab_cmd("skills", "list", "--json", cwd=work)
    import json

    assert [(s["name"], s["source"]) for s in json.loads(trusted.stdout)] == [
        ("deploy", "project"),
        ("pdf", "user"),
        ("planted", "config"),
        ("lint", "plugin shipper"),
    ]


def test_a_trusted_project_may_replace_a_user_skill_an_untrusted_one_may_not(crab_cmd, home, work, write_skill):
    write_skill(work / ".crab" / "skills", "pdf", "name: pdf\ndescription: the repository's pdf", "REPO-PDF")
    untrusted = crab_cmd("skills", "show", "pdf", cwd=work)
    assert "PDF-BODY" in untrusted.stdout and "REPO-PDF" not in untrusted.stdout
    assert "is hidden by the one from user" in untrusted.stderr
    (work / ".crab" / "config.toml").write_text("")
    assert crab_cmd("trust", cwd=work).returncode == 0
    trusted = crab_cmd("skills", "show", "pdf", cwd=work)
    assert "REPO-PDF" in trusted.stdout
