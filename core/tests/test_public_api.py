"""The public API: what plugins may import is named, complete, documented, and 1.x plugins keep working."""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import crab
import pytest
from crab._contracts.commands import CommandContext
from crab._contracts.handle import AgentHandle
from crab._host.api_version import API_VERSION, check_range
from crab.testing import AgentHarness

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = (
    "crab",
    "crab.processes",
    "crab.testing",
    "crab.steps",
    "crab_provider_kit",
    "crab_sql_kit",
    "crab_jobs_kit",
    "crab_frontmatter_kit",
)


def public_names() -> dict[str, list[str]]:
    return {module: list(importlib.import_module(module).__all__) for module in PUBLIC}


def test_api_version_is_still_1x_so_plugins_written_for_1_0_load():
    assert check_range(">=1.0,<2", API_VERSION)
    assert crab.API_VERSION == API_VERSION


@pytest.mark.parametrize("module", PUBLIC)
def test_every_public_name_resolves(module: str):
    loaded = importlib.import_module(module)
    for name in loaded.__all__:
        assert getattr(loaded, name) is not None, f"{module}.{name}"
    with pytest.raises(AttributeError):
        loaded.no_such_name  # noqa: B018


def test_crab_all_is_exactly_the_lazy_exports():
    assert sorted(crab.__all__) == sorted(["__version__", *crab._EXPORTS])
    assert len(set(crab.__all__)) == len(crab.__all__)


def test_type_checkers_see_every_public_name_where_it_is_imported_from():
    # crab/__init__.py names each public name twice: in the lazy table (runtime) and in its
    # TYPE_CHECKING imports (mypy): a name missing from the imports would be typed Any for plugins.
    tree = ast.parse(Path(crab.__file__).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    seen = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names:
            public = alias.asname or alias.name
            seen[public] = node.module if public == alias.name else f"{node.module}:{alias.name}"
    assert seen == crab._EXPORTS


def test_no_public_name_is_shadowed_by_a_submodule():
    # `import crab._contracts.truncate` sets the attribute crab._contracts.truncate to the module: a public function
    # with a submodule's name would turn into that module once anything imported it.
    submodules = {p.stem for p in Path(crab.__file__).parent.glob("*.py")} | {
        p.name for p in Path(crab.__file__).parent.iterdir() if p.is_dir()
    }
    assert sorted(set(crab.__all__) & submodules) == []


def test_every_public_name_is_documented_in_docs_api():
    text = (ROOT / "docs" / "api.md").read_text()
    for module, names in public_names().items():
        assert f"`{module}`" in text, module
        for name in names:
            if name != "__version__":
                assert re.search(rf"`{re.escape(name)}`", text), f"{module}.{name} is not in docs/api.md"


def plugin_imports(*, tests: bool = False) -> list[tuple[str, int, str, str]]:
    """(file, line, plugin package, imported module) for every import in first-party plugin code
    (with ``tests``, in plugins' and kits' tests instead: ``package`` is then the folder's name)."""
    found = []
    if tests:
        paths = sorted([*(ROOT / "plugins").glob("*/tests/**/*.py"), *(ROOT / "kits").glob("*/tests/**/*.py")])
    else:
        paths = sorted((ROOT / "plugins").glob("*/src/*/**/*.py"))
    for path in paths:
        package = path.relative_to(ROOT).parts[1 if tests else 3]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.append((str(path.relative_to(ROOT)), node.lineno, package, node.module))
            elif isinstance(node, ast.Import):
                found.extend((str(path.relative_to(ROOT)), node.lineno, package, a.name) for a in node.names)
    return found


def test_first_party_plugins_import_only_the_public_api():
    imports = plugin_imports()
    assert len(imports) > 50
    private = [
        f"{file}:{line}: {module}"
        for file, line, _, module in imports
        if (
            module == "crab"
            or module.startswith(
                ("crab.", "crab_provider_kit.", "crab_sql_kit.", "crab_jobs_kit.", "crab_frontmatter_kit.")
            )
        )
        and module not in PUBLIC
    ]
    assert private == [], "import these names from crab, crab.processes, crab.testing or a kit (docs/api.md)"


def test_plugin_tests_import_only_the_public_api_too():
    # A plugin's tests are what its author copies from: they use crab.testing, never core's insides.
    imports = plugin_imports(tests=True)
    assert len(imports) > 100
    private = [
        f"{file}:{line}: {module}"
        for file, line, folder, module in imports
        if (
            module == "crab"
            or module.startswith(
                ("crab.", "crab_provider_kit.", "crab_sql_kit.", "crab_jobs_kit.", "crab_frontmatter_kit.")
            )
        )
        and module not in PUBLIC
        and not module.startswith(f"crab_{folder.replace('-', '_')}.")  # a kit's tests may test its own modules
    ]
    assert private == [], "import these names from crab or crab.testing (add what tests need to crab.testing)"


def test_no_first_party_plugin_imports_another_plugin():
    packages = {p.name for p in (ROOT / "plugins").glob("*/src/crab_*")}
    crossing = [
        f"{file}:{line}: {module}"
        for file, line, package, module in plugin_imports()
        if module.split(".")[0] in packages - {package}
    ]
    assert crossing == []


def test_a_plugin_written_for_api_1_0_works_unchanged(crab_run, fake_site, tmp_path: Path):
    env = fake_site(["scripted", "legacy"])
    env["CRAB_PLUGINS"] = "scripted,legacy"
    env["CRAB_FAKE_LEGACY_LOG"] = str(tmp_path / "legacy.log")
    env["PYTHONWARNINGS"] = "always::DeprecationWarning"
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "s.json"
    replies = [[{"tool": "shout", "args": {"text": "hi"}}], [{"tool": "shout", "args": {"text": ""}}], [{"text": "ok"}]]
    script.write_text(json.dumps({"replies": replies}))
    common = ["-m", f"scripted/{script}", "--set", "crab.renderer=transcript", "--store", "memory"]
    turn = crab_run(["run", *common, "go"], env, cwd=work)
    assert turn.returncode == 0, turn.stderr
    assert turn.stdout.startswith(
        "[call shout {'text': 'hi'}][result HI][call shout {'text': ''}][result nothing to shout error]ok[end end]"
    )
    command = crab_run(["run", *common, "/whoami"], env, cwd=work)
    assert command.returncode == 0, command.stderr
    assert "[/whoami: scripted in store memory, 1 tools, local=True]" in command.stdout
    assert (tmp_path / "legacy.log").read_text().splitlines() == [
        "startup store=memory permissions=ask",
        f"shutdown model={script}",
    ] * 2
    # CommandContext.agent still works and says what replaces it.
    assert "CommandContext.agent is deprecated; use ctx.handle" in command.stderr
    assert "Traceback" not in turn.stderr + command.stderr


def make_handle() -> tuple[AgentHarness, AgentHandle]:
    harness = AgentHarness([[{"text": "hello"}]])
    return harness, harness.handle


def test_the_handle_offers_what_commands_and_channels_need(crab_home):
    harness, handle = make_handle()
    try:
        assert handle.local is True
        assert handle.store_name == "memory"
        assert handle.provider_name == harness.agent.provider.name
        assert "help" in handle.commands and "quit" in handle.commands
        assert {p.name: p.status for p in handle.plugins()}["core"] == "builtin"
        seen: list[crab.Event] = []
        unsubscribe = handle.subscribe(seen.append)
        handle.notice("from a channel", "warning")
        outcome = harness.run_async(handle.handle_input(harness.session, "hi"))
        unsubscribe()
        assert outcome.text == "hello"
        assert seen[0] == crab.NoticeEvent("from a channel", "warning")
        forked = harness.run_async(handle.fork(harness.session.id))
        assert harness.run_async(handle.session_info(forked.id)).forked_from == harness.session.id
        assert handle.abort(harness.session) is False
    finally:
        harness.close()


def test_the_handle_is_a_protocol_and_forwards_nothing_to_the_agent(crab_home):
    # Every member a plugin may use is named on the Protocol (mypy sees each); the loop's handle
    # offers exactly those, and an Agent attribute the Protocol does not name is not reachable.
    assert getattr(AgentHandle, "_is_protocol", False)
    harness, handle = make_handle()
    try:
        named = {name for name in vars(AgentHandle) if not name.startswith("_")}
        offered = {name for name in dir(type(handle)) if not name.startswith("_")}
        assert named == offered
        assert isinstance(handle, AgentHandle) and not isinstance(harness.agent, AgentHandle)
        with pytest.raises(AttributeError):
            handle.store  # type: ignore[attr-defined]  # noqa: B018
        with pytest.raises(AttributeError):
            handle.no_such_attribute  # type: ignore[attr-defined]  # noqa: B018
    finally:
        harness.close()


def test_a_command_context_gives_its_handle_to_the_1_0_name_too(crab_home):
    harness, handle = make_handle()
    try:
        ctx = CommandContext(handle, harness.session)
        with pytest.warns(DeprecationWarning, match="use ctx.handle"):
            assert ctx.agent is ctx.handle
        result = harness.run_async(_session_text(ctx))
        assert result.startswith(f"session {harness.session.id}")
    finally:
        harness.close()


async def _session_text(ctx: CommandContext) -> str:
    from crab._builtin.commands import session_command

    return await session_command(ctx, "")
