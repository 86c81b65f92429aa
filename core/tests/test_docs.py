"""Documentation that must not go stale: every hook documented, the README's promises intact."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from crab._host import hookspecs

ROOT = Path(__file__).resolve().parents[2]
HOOKS = [name for name, value in vars(hookspecs).items() if name.startswith("crab_") and inspect.isfunction(value)]


def test_every_hookspec_has_a_docstring():
    assert len(HOOKS) == 23  # update docs/hooks.md when this changes
    for name in HOOKS:
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert len(doc) > 40, name


def test_every_hook_is_documented_with_its_signature():
    text = (ROOT / "docs" / "hooks.md").read_text()
    for name in HOOKS:
        params = ", ".join(inspect.signature(getattr(hookspecs, name)).parameters)
        assert f"### `{name}({params})" in text, name


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    marker = readme.index("<!-- test-command")
    command = readme[marker:].splitlines()[2]
    # The whole suite: its options only spread it over workers (pytest-xdist), none narrows it.
    before, found, options = command.partition(".venv/bin/pytest")
    assert found and before.endswith("&& "), command
    words = options.split()
    assert set(words[::2]) <= {"-n", "--dist"} and len(words) % 2 == 0, command
    assert "test-command" in (ROOT / ".ci" / "run").read_text()


def test_every_plugin_is_installed_for_development_and_listed():
    requirements = (ROOT / "requirements-dev.txt").read_text()
    readme = (ROOT / "README.md").read_text()
    for pyproject in sorted((ROOT / "plugins").glob("*/pyproject.toml")):
        folder = pyproject.parent.name
        assert f"-e ./plugins/{folder}" in requirements, folder
        distribution = re.search(r'^name = "([^"]+)"', pyproject.read_text(), re.M)
        assert distribution and distribution.group(1) in readme, folder


def test_agents_md_lint_and_type_commands_are_what_ci_runs():
    """AGENTS.md's ruff and mypy lines check what CI checks (its mypy line once left out the kits)."""
    ci = {line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()}
    agents = (ROOT / "AGENTS.md").read_text()
    block = agents[agents.index("## Set up and check") :].split("```")[1]
    commands = [line.split("  #")[0].strip() for line in block.splitlines()]
    mypy = [command for command in commands if command.startswith(".venv/bin/mypy")]
    assert mypy and all(command in ci for command in mypy), mypy
    ruff = [part.strip() for command in commands if "ruff" in command for part in command.split("&&")]
    assert ruff and all(part in ci for part in ruff), ruff


def test_the_docs_name_the_api_version_crab_has():
    """docs/api.md says which API version this crab is, and the plugin guide's example declares the
    range `crab plugin new` writes for it."""
    from crab._host.api_version import API_VERSION, compatible_range

    assert f"`crab.API_VERSION` (now `{API_VERSION}`)" in (ROOT / "docs" / "api.md").read_text()
    written = f'CRAB_API = "{compatible_range()}"'
    assert written in (ROOT / "docs" / "plugins.md").read_text()
    assert written in (ROOT / "plugin-template" / "src" / "crab_example" / "__init__.py").read_text()


def test_the_package_table_names_every_module_of_core():
    """docs/architecture.md's package-by-package table names each module where it lives (it had lost
    `_loop/images.py` and four of `crab.testing`'s); `_cli` is "one module per command"."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("## crab-core, package by package") :].split("\n## ")[0]
    rows = {
        row.split("|")[1].strip().strip("`"): set(re.findall(r"`([\w]+\.(?:py|md))`", row.split("|")[2]))
        for row in section.splitlines()
        if row.startswith("| `")
    }
    package = ROOT / "core" / "src" / "crab"
    folders = {name: package / name for name in ("_assembly", "_builtin", "_config", "_contracts", "_host")}
    folders |= {name: package / name for name in ("_loop", "_secrets", "_system", "_values")}
    folders["testing"] = ROOT / "testing" / "src" / "crab" / "testing"  # crab-testing, beside core
    for name, folder in folders.items():
        modules = {p.name for p in folder.iterdir() if p.suffix in (".py", ".md")} - {"__init__.py"}
        assert modules <= rows[name], (name, sorted(modules - rows[name]))


def test_tools_basic_doc_names_the_first_request_budget_the_snapshot_test_holds():
    """docs/tools-basic.md said 1,200 after issue 38 raised the budget to 1,350."""
    source = (ROOT / "tests" / "test_system_prompt_snapshot.py").read_text()
    found = re.search(r"^FIRST_REQUEST_BUDGET = (\d+)", source, re.M)
    assert found, "tests/test_system_prompt_snapshot.py names no FIRST_REQUEST_BUDGET"
    budget = int(found.group(1))
    assert (
        f"held under {budget:,} by `tests/test_system_prompt_snapshot.py`"
        in (ROOT / "docs" / "tools-basic.md").read_text()
    )


def test_the_library_guides_steps_loop_runs_a_turn_to_its_end():
    """docs/library.md's driver loop, run as written with a trivial activity per step, ends the turn;
    and the step it says comes first is the machine's first (it implied a Record)."""
    from crab._contracts.messages import AssistantMessage
    from crab._loop import steps

    text = (ROOT / "docs" / "library.md").read_text()
    found = re.search(r"```python\n(.*?)```", text[text.index("## Steps") :], re.S)
    assert found, "docs/library.md's Steps section has no python block"
    code = found.group(1)
    answers = {
        steps.Submit: steps.Submitted(),
        steps.Accept: steps.Done(),
        steps.Record: steps.Done(),
        steps.Notify: steps.Done(),
        steps.CallModel: steps.ModelReplied(AssistantMessage(content="done")),
        steps.CheckEnd: steps.Continued(),
        steps.TakeSteering: steps.Steered(),
    }
    seen: list[str] = []

    def carry_out(step: object) -> object:
        seen.append(type(step).__name__)
        return answers[type(step)]

    namespace = {"carry_out": carry_out, "session_id": "s1", "turn_id": "t1", "history": []}
    exec(code, namespace)
    assert isinstance(namespace["step"], steps.EndTurn) and namespace["step"].stop == "end"
    first = re.search(r"the first is (\w+)", code)
    assert first and first.group(1) == seen[0], (seen, code)


def test_the_architecture_diagram_makes_a_turn_as_the_code_does():
    """The diagram showed `Turn(agent, …)` after a turn stopped holding its agent (it is given a `ModelContext`)."""
    from crab._loop.turn import Turn

    diagram = (ROOT / "docs" / "architecture.md").read_text().split("```")[1]
    shown = re.search(r"Turn\(([^)]*)\)", diagram)
    assert shown, "docs/architecture.md's diagram shows no Turn(...)"
    first = shown.group(1).split(",")[0].strip()
    assert first == next(iter(inspect.signature(Turn).parameters)), shown.group(0)


def test_every_place_usage_is_shown_documents_its_cache_fields():
    """Issue 38: usage carries cache reads and writes wherever it is shown or stored, and each
    place's doc names the fields (crab-http's and crab-eval's READMEs did not)."""
    places = {
        "docs/format.md": ("cache_read_tokens", "cache_write_tokens"),
        "docs/commands.md": ("cache reads and writes",),
        "plugins/http/README.md": ("cached_tokens", "cache_write_tokens"),
        "plugins/eval/README.md": ("cache_read_tokens", "cache_write_tokens"),
    }
    for path, fields in places.items():
        text = (ROOT / path).read_text()
        assert all(field in text for field in fields), (path, fields)


def test_the_plugin_guide_says_the_handle_is_a_protocol():
    """Issue 40 made `AgentHandle` a Protocol that forwards nothing; the author's guide said only
    "never the agent"."""
    from typing import Protocol

    import crab

    assert Protocol in crab.AgentHandle.__mro__
    text = (ROOT / "docs" / "plugins.md").read_text()
    section = text[text.index("### The agent handle: `AgentHandle`") :].split("\n### ")[0]
    assert "`typing.Protocol`" in section and "AgentHarness.handle" in section


def test_the_bash_doc_says_what_the_sandbox_does_to_a_background_child():
    """Issue 39 item 11: under crab-sandbox a `cmd &` ends with its call; docs/tools-basic.md said
    only that it lives until crab exits."""
    text = (ROOT / "docs" / "tools-basic.md").read_text()
    item = text[text.index("(`server &`)") :].split("\n- ")[0]
    assert "crab-sandbox" in item and "background: true" in item, item
