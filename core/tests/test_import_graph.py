"""Core's import graph, read with ``ast``: no cycles, nothing outside the CLI imports it, and the
layers docs/architecture.md draws (``LAYERS``), package by package, type-only imports counted.

An edge ``a → b`` is an import statement in module ``a`` that names module ``b`` (``import b``,
``from b import x``, or ``from pkg import b`` when ``b`` is a module), wherever it stands: imports
inside functions count, because they run as soon as the function does. Imports under
``if TYPE_CHECKING:`` do not, for cycles: they never run. A package's ``__init__`` is not an edge
of its submodules (Python runs it first, but that is the package's order, not a dependency).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import crab
import crab.testing

ROOT = Path(crab.__file__).parent
TESTING = Path(crab.testing.__file__).parent
"""crab.testing, the distribution crab-testing beside core (testing/ in this repository): checked
with core, as one package, since it drives core's private modules."""
CLI = "crab._cli"
CLI_ENTRY = "crab.__main__"  # ``python -m crab`` is the CLI's own entry point
CLI_DRIVER = "crab.testing.harness"
"""The test kit's ``run_cli`` drives the CLI in-process, as it always has (API 1.x: a test's
monkeypatches apply to the command it runs); the kit is not part of core's runtime."""


def module_names(root: Path | None = None) -> dict[str, Path]:
    """Dotted name → file, for every module of the package at ``root`` (by default core's ``crab``
    and crab-testing's ``crab.testing``)."""
    if root is None:
        return {**module_names(ROOT), **module_names(TESTING.parent)}
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """Every node inside an ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``) block."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            skipped.update(id(inner) for statement in node.body for inner in ast.walk(statement))
    return skipped


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    """The dotted names an import statement may refer to (absolute, relative ones resolved)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        package = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}".rstrip(".")
    # "from pkg import b" names the module pkg.b when there is one, else a name in pkg itself
    yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(modules: dict[str, Path], *, type_checking: bool = False) -> dict[str, set[str]]:
    """Module → the core modules it imports (``type_checking``: count those blocks too)."""

    def known(name: str) -> str | None:
        while name and name not in modules:  # "crab._host.plugin_host.PluginHost" → its module
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skipped = set() if type_checking else _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skipped or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _imported(node, name, path.name == "__init__.py"):
                hit = known(target)
                if hit is not None and hit != name:
                    graph[name].add(hit)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (each a cycle), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


LAYERS: tuple[tuple[str, ...], ...] = (
    ("testing",),
    ("crab",),
    ("config", "events", "hooks", "messages", "rendering", "secrets", "steps", "storage", "tools"),
    ("_cli",),
    ("_assembly",),
    ("_builtin",),
    ("_loop",),
    ("_host",),
    ("_secrets",),
    ("_config",),
    ("processes",),
    ("_system",),
    ("_values",),
    ("_contracts", "_version"),
)
"""Core's parts from the top down (docs/architecture.md, "crab-core, package by package"): a part
imports only parts below it, in the style of import-linter's layers contract, imports under
``TYPE_CHECKING`` counted (a part that names another's types in its signatures depends on it).
Parts on one line are independent: neither imports the other. ``crab`` is the package's facade
(``crab/__init__.py``), the line below it the public submodules that re-export the rest of the API
(docs/api.md), ``testing`` the test kit (crab-testing); ``__main__`` belongs to ``_cli``."""

LAYER_EXCEPTIONS: dict[tuple[str, str], str] = {}
"""Edges against ``LAYERS`` still in the code, each with why; removing one is a one-line change."""


def part_of(module: str) -> str:
    """The layer part a core module belongs to (``crab._loop.turn`` → ``_loop``)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "crab"
    return "_cli" if parts[1] == "__main__" else parts[1]


def layer_violations(
    graph: dict[str, set[str]], layers: tuple[tuple[str, ...], ...]
) -> dict[tuple[str, str], list[str]]:
    """(importer part, imported part) → the module edges that break ``layers`` (an import of a part
    that is not below the importer's), parts named in no layer included as their own."""
    rank = {part: depth for depth, line in enumerate(layers) for part in line}
    found: dict[tuple[str, str], list[str]] = {}
    for module, targets in graph.items():
        source = part_of(module)
        for target in targets:
            into = part_of(target)
            if into == source:
                continue
            if rank.get(into, -1) <= rank.get(source, -1):
                found.setdefault((source, into), []).append(f"{module} → {target}")
    return found


def test_core_keeps_its_layers():
    graph = import_graph(module_names(), type_checking=True)
    assert {part_of(name) for name in graph} <= {part for line in LAYERS for part in line}
    violations = layer_violations(graph, LAYERS)
    unexplained = {edge: sorted(lines) for edge, lines in violations.items() if edge not in LAYER_EXCEPTIONS}
    assert unexplained == {}, "an import against docs/architecture.md's layers: move the shared piece down"
    gone = sorted(set(LAYER_EXCEPTIONS) - set(violations))
    assert gone == [], "these exceptions no longer happen: remove them from LAYER_EXCEPTIONS"


def test_the_contracts_import_nothing_else_of_crab():
    # Not even a type: crab.Config's data is a contract (_contracts/config.py), its loading _config's.
    graph = import_graph(module_names(), type_checking=True)
    runtime = import_graph(module_names())
    outside = sorted(
        f"{name} → {target}"
        for name, targets in runtime.items()
        if part_of(name) == "_contracts"
        for target in targets
        if part_of(target) != "_contracts"
    )
    assert outside == []
    typed = {part_of(t) for name, targets in graph.items() if part_of(name) == "_contracts" for t in targets}
    assert typed == {"_contracts"}


CONTRACT_FUNCTIONS: dict[str, str] = {
    "config.format_key": "how a key is written in every config message; InvalidValue's text uses it",
    "config.show_value": "how a value is written in every config message; InvalidValue's text uses it",
    "config._number": "a bound in Setting's range text",
    "images.sniff_image": "ImagePart.from_bytes and from_path type the bytes they are given",
    "images.sha256_hex": "ImagePart computes its hash from its bytes",
    "images.human_size": "ImagePart.describe",
    "run_context.run_context": "RunContext built from a ToolContext, for a tool typed to take one",
    "tools._no_event": "ToolContext.emit's default",
    "tools._no_usage": "ToolContext.add_usage's default",
}
"""Module-level functions the contracts still define, each with why; work on the contracts' values
(schemas, @crab.tool, truncation, JSON forms, redacted questions) lives in ``crab._values``."""


def test_the_contracts_define_only_the_functions_their_types_need():
    found = set()
    for name, path in module_names().items():
        if part_of(name) != "_contracts":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.add(f"{name.rpartition('.')[2]}.{node.name}")
    assert sorted(found - set(CONTRACT_FUNCTIONS)) == [], "implementation belongs in crab._values or the loop"
    assert sorted(set(CONTRACT_FUNCTIONS) - found) == [], "gone from the contracts: remove them from the list"


LOOP_MODULES: dict[str, str] = {
    "agent": "the agent: routing input to a command, !cmd or a turn; queues, abort",
    "session": "a live session and its queued inputs",
    "sessions": "opening, resuming and leaving sessions",
    "steps": "a turn's decisions, a state machine without I/O",
    "turn": "the in-process driver of those steps",
    "turn_steps": "one step carried out for a driver elsewhere (crab.steps.TurnSteps)",
    "model_context": "what a session's model is given",
    "model_call": "the one path every model call takes",
    "model_choice": "which provider and model each live session talks to",
    "recorder": "the one writer of entries",
    "delivery": "the one place events are delivered",
    "tool_runner": "a reply's tool calls",
    "tool_exec": "carrying out one tool call",
    "compaction": "the compaction step and its model calls",
    "child": "a tool call's child session (AgentHandle.run_child)",
    "handle": "the AgentHandle Protocol's implementation",
}
"""The kernel's loop, module by module, each with its job (docs/architecture.md, "The kernel"): the
loop holds only these; work on values goes to ``crab._values``, what runs around an agent (``crab
serve``'s turn engines) to ``crab._assembly``."""


def test_the_loop_holds_only_the_kernels_jobs():
    found = {name.rpartition(".")[2] for name in module_names() if part_of(name) == "_loop" and name != "crab._loop"}
    assert sorted(found - set(LOOP_MODULES)) == [], "a new loop module: is it the kernel's job? else move it down"
    assert sorted(set(LOOP_MODULES) - found) == [], "gone from the loop: remove them from LOOP_MODULES"


def test_a_layer_check_sees_upward_and_sideways_imports(tmp_path: Path):
    graph = {
        "crab._loop.turn": {"crab._contracts.tools", "crab._host.dispatch"},
        "crab._host.dispatch": {"crab._loop.turn"},
        "crab._config.paths": {"crab._secrets.keys"},
        "crab._secrets.keys": {"crab._config.paths"},
    }
    layers = (("_loop",), ("_host",), ("_secrets", "_config"), ("_contracts",))
    assert layer_violations(graph, layers) == {
        ("_host", "_loop"): ["crab._host.dispatch → crab._loop.turn"],
        ("_config", "_secrets"): ["crab._config.paths → crab._secrets.keys"],
        ("_secrets", "_config"): ["crab._secrets.keys → crab._config.paths"],
    }


def in_cli(name: str) -> bool:
    return name == CLI or name.startswith(f"{CLI}.")


def test_core_has_no_import_cycle():
    cycles = strongly_connected(import_graph(module_names()))
    assert cycles == [], "import cycles (break each by moving the shared piece below both):\n" + "\n".join(
        " ↔ ".join(cycle) for cycle in cycles
    )


def test_no_runtime_module_imports_the_cli():
    # TYPE_CHECKING imports count here: a runtime module naming a CLI type depends on the CLI too.
    graph = import_graph(module_names(), type_checking=True)
    offenders = sorted(
        f"{name} → {target}"
        for name, targets in graph.items()
        if not in_cli(name) and name not in (CLI_ENTRY, CLI_DRIVER)
        for target in targets
        if in_cli(target)
    )
    assert offenders == []


def test_the_graph_sees_imports_in_functions_but_not_type_checking_blocks(tmp_path: Path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from pkg import b\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.c\nimport pkg.a\n"
    )
    (package / "c.py").write_text("from pkg.sub.d import thing\n")
    (package / "sub" / "__init__.py").write_text("from . import d\n")
    (package / "sub" / "d.py").write_text("from ..c import x\n")
    graph = import_graph(module_names(package))
    assert graph["pkg.a"] == {"pkg.b"}
    assert graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.sub"] == {"pkg.sub.d"}
    assert graph["pkg.sub.d"] == {"pkg.c"}
    assert strongly_connected(graph) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.sub.d"]]
    assert "pkg.c" in import_graph(module_names(package), type_checking=True)["pkg.b"]
