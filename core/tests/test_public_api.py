"""The public API: what plugins may import is named, small, written once, documented, and
importing it changes nothing but ``sys.modules``."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import crab
import pytest
from crab._contracts.commands import CommandContext
from crab._contracts.handle import AgentHandle
from crab._host.api_version import API_VERSION, check_range, compatible_range
from crab.testing import AgentHarness

ROOT = Path(__file__).resolve().parents[2]
SUBMODULES = (
    "crab.config",
    "crab.events",
    "crab.hooks",
    "crab.messages",
    "crab.processes",
    "crab.rendering",
    "crab.secrets",
    "crab.steps",
    "crab.storage",
    "crab.tools",
)
"""crab's public submodules, each owning its ``__all__`` (docs/api.md)."""
KITS = ("crab_provider_kit", "crab_sql_kit", "crab_jobs_kit", "crab_frontmatter_kit")
PUBLIC = ("crab", *SUBMODULES, "crab.testing", *KITS)


def public_names() -> dict[str, list[str]]:
    return {module: list(importlib.import_module(module).__all__) for module in PUBLIC}


def test_the_api_version_is_crab_cores_own_minor_and_plugins_declare_it():
    # crab is 0.x: the API version is the distribution's major.minor, and a plugin's range ends
    # before the next minor (the template writes compatible_range()).
    assert API_VERSION == ".".join(crab.__version__.split(".")[:2]) == crab.API_VERSION
    assert compatible_range() == f">={API_VERSION},<0.{int(API_VERSION.split('.')[1]) + 1}"
    assert check_range(compatible_range(), API_VERSION)
    assert not check_range(">=1.0,<2", API_VERSION)  # the old numbering fits no 0.x crab


def test_crab_holds_about_forty_names_and_the_rest_lives_in_submodules():
    assert len(crab.__all__) <= 45, sorted(crab.__all__)
    assert len(set(crab.__all__)) == len(crab.__all__)
    for module in SUBMODULES:
        assert getattr(crab, module.split(".")[1]) is importlib.import_module(module)
        assert module.split(".")[1] not in crab.__all__  # a submodule is reached, not star-imported


@pytest.mark.parametrize("module", PUBLIC)
def test_every_public_name_resolves(module: str):
    loaded = importlib.import_module(module)
    assert loaded.__all__, module
    for name in loaded.__all__:
        assert getattr(loaded, name) is not None, f"{module}.{name}"
    with pytest.raises(AttributeError):
        loaded.no_such_name  # noqa: B018


def test_each_public_name_has_one_home():
    # A name is crab's or one submodule's, never two spellings of one object.
    homes: dict[str, list[str]] = {}
    for module in ("crab", *SUBMODULES):
        for name in importlib.import_module(module).__all__:
            homes.setdefault(name, []).append(module)
    assert {name: where for name, where in homes.items() if len(where) > 1} == {}


def _imported_names(tree: ast.Module) -> set[str]:
    return {
        alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names
    }


@pytest.mark.parametrize("module", [m for m in SUBMODULES if m != "crab.processes"])
def test_a_submodule_exports_exactly_what_it_imports(module: str):
    # Facade modules only re-export: the names they import are their __all__, no more, no less.
    loaded = importlib.import_module(module)
    tree = ast.parse(Path(loaded.__file__ or "").read_text())
    assert _imported_names(tree) == set(loaded.__all__)


def test_crabs_names_are_written_once_where_type_checkers_read_them():
    # One list: the TYPE_CHECKING block of crab/__init__.py, each name imported as itself. Type
    # checkers read it; crab.__getattr__ reads the same lines; __all__ is derived from it.
    tree = ast.parse(Path(crab.__file__).read_text())
    [block] = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    seen: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names:
            assert alias.asname == alias.name, f"{alias.name} is re-exported only as itself"
            assert alias.name not in seen, f"{alias.name} is written twice"
            seen[alias.name] = node.module
    assert sorted(n for n, m in seen.items() if m != "crab") == sorted(set(crab.__all__) - {"__version__"})
    assert sorted(f"crab.{n}" for n, m in seen.items() if m == "crab") == sorted(SUBMODULES)
    for name, module in seen.items():
        if module != "crab":
            assert getattr(crab, name) is getattr(importlib.import_module(module), name)


def test_no_public_name_is_shadowed_by_a_submodule():
    # `import crab._contracts.truncate` sets the attribute crab._contracts.truncate to the module: a public function
    # with a submodule's name would turn into that module once anything imported it.
    submodules = {p.stem for p in Path(crab.__file__).parent.glob("*.py")} | {
        p.name for p in Path(crab.__file__).parent.iterdir() if p.is_dir()
    }
    assert sorted(set(crab.__all__) & submodules) == []


IMPORT_EVERYTHING = """
import sys
before = list(sys.meta_path), list(sys.path_hooks)
import crab
for name in sys.argv[1:]:
    __import__(name)
for name in crab.__all__:
    getattr(crab, name)
after = list(sys.meta_path), list(sys.path_hooks)
print(before == after, [type(f).__qualname__ for f in after[0] if f not in before[0]])
"""


def test_importing_crab_installs_no_import_hook():
    # No finder on sys.meta_path (crab 0.1 dropped the API 1.x shims that kept old paths importing).
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING, *SUBMODULES, "crab.testing"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert result.stdout.split("\n")[0] == "True []", result.stdout + result.stderr


def test_an_old_module_path_is_an_ordinary_import_error():
    for old in ("crab.loop", "crab.render.plain", "crab.provider_kit", "crab.errors"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)
    with pytest.raises(AttributeError, match=r"docs/api\.md lists crab.s names"):
        crab.TextDelta  # noqa: B018  # api-codemod: keep (it lives in crab.events now)


def test_crab_core_registers_no_pytest_plugin_and_crab_testing_does():
    # Installing crab-core adds no pytest plugin to its users' test runs: the fixtures come with
    # crab-testing (the distribution of crab.testing), which a plugin's test extra names.
    core = importlib.metadata.distribution("crab-core")
    assert [ep for ep in core.entry_points if ep.group == "pytest11"] == []
    assert not any(path.parts[:2] == ("crab", "testing") for path in core.files or ())
    testing = importlib.metadata.distribution("crab-testing")
    [plugin] = [ep for ep in testing.entry_points if ep.group == "pytest11"]
    assert plugin.value == "crab.testing.pytest_plugin"


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


def test_a_plugin_from_api_1_0_works_once_its_crab_api_names_0_1(crab_run, fake_site, tmp_path: Path):
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
        seen: list[crab.events.Event] = []
        unsubscribe = handle.subscribe(seen.append)
        handle.notice("from a channel", "warning")
        outcome = harness.run_async(handle.handle_input(harness.session, "hi"))
        unsubscribe()
        assert outcome.text == "hello"
        assert seen[0] == crab.events.NoticeEvent("from a channel", "warning")
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
