"""Every package of the repository has the shape docs/plugins.md asks of a plugin, and ships.

Checked for core/, every kits/*/ and every plugins/*/ folder, so a new plugin or kit that follows
the documented shape passes without editing this file: a pyproject on hatchling naming
crab-<folder>, a README and a LICENSE, one place for the version, bounded crab-core dependency,
py.typed; a plugin has the `crab` entry point and CRAB_API, a kit has no entry point and imports
only crab's public API. Each plugin README carries its config keys in a block generated from the
plugin's own ConfigTable (so it cannot drift): regenerate with `python tests/test_plugin_packages.py`.
The slow test looks inside a wheel and an sdist of every package (built once, tests/conftest.py).
"""

from __future__ import annotations

import importlib
import re
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = sorted(p for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").is_file())
KITS = sorted(p for p in (ROOT / "kits").iterdir() if (p / "pyproject.toml").is_file())
PACKAGES = [ROOT / "core", *KITS, *PLUGINS]
PUBLIC = {"crab", "crab.testing"} | {
    f"crab.{name}"
    for name in (
        "config",
        "events",
        "hooks",
        "messages",
        "processes",
        "rendering",
        "secrets",
        "steps",
        "storage",
        "tools",
    )
}
TESTING = ROOT / "testing"
"""crab-testing: ``crab.testing``, released with crab-core (its own distribution, no crab plugin)."""
BEGIN = "<!-- config-keys: generated from the plugin's ConfigTable by tests/test_plugin_packages.py; do not edit -->"
END = "<!-- config-keys: end -->"
LOWER = re.compile(r"(>=|==|~=|>)\s*\d")


def project(folder: Path) -> dict[str, Any]:
    return tomllib.loads((folder / "pyproject.toml").read_text())


def package_of(folder: Path) -> str:
    return "crab" if folder.name == "core" else "crab_" + folder.name.replace("-", "_")


def config_keys_block(plugin: str) -> str:
    """The README block listing ``[plugins.<plugin>]``: each key, its type, default and meaning."""
    from crab._contracts.config import show_value

    target = project(ROOT / "plugins" / plugin)["project"]["entry-points"]["crab"][plugin]
    module_name, _, attr = target.partition(":")
    plugin_object: Any = importlib.import_module(module_name)
    if attr:  # a class entry point: crab makes one object of it per plugin host
        plugin_object = getattr(plugin_object, attr)()
    declare = getattr(plugin_object, "crab_config_table", None)
    table = declare() if declare is not None else None
    if table is None:
        return f"{BEGIN}\nThis plugin has no settings.\n{END}"
    rows = [f"`[plugins.{plugin}]`" + (f": {table.doc}" if table.doc else ""), "", "| key | type | default | meaning |"]
    rows.append("|---|---|---|---|")
    for s in table.settings:
        default = "unset" if s.default is None else "`{}`" if s.default == {} else f"`{show_value(s.default)}`"
        doc = s.doc.replace("|", "\\|") + (f" ({s.trust})" if s.trust else "")
        rows.append(f"| `{s.name}` | {s.kind} | {default} | {doc} |")
    return "\n".join([BEGIN, *rows, END])


def readme_block(text: str) -> str | None:
    start, end = text.find(BEGIN), text.find(END)
    return text[start : end + len(END)] if start >= 0 and end > start else None


@pytest.mark.parametrize("folder", PACKAGES, ids=lambda p: p.name)
def test_the_package_has_the_documented_shape(folder: Path):
    meta = project(folder)
    build = meta["build-system"]
    assert build["build-backend"] == "hatchling.build" and any(r.startswith("hatchling") for r in build["requires"])
    info = meta["project"]
    assert info["name"] == ("crab-core" if folder.name == "core" else f"crab-{folder.name}")
    assert info["readme"] == "README.md" and (folder / "README.md").is_file()
    assert info.get("license") and (folder / "LICENSE").is_file(), "declare license and add a LICENSE file"
    assert info["requires-python"].startswith(">=3.")
    package = folder / "src" / package_of(folder)
    assert (package / "py.typed").is_file(), f"add {package.relative_to(ROOT)}/py.typed"
    assert meta["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == [f"src/{package_of(folder)}"]


@pytest.mark.parametrize("folder", PACKAGES, ids=lambda p: p.name)
def test_the_version_is_written_in_one_place(folder: Path):
    meta = project(folder)
    package = folder / "src" / package_of(folder)
    assigned = [p for p in package.rglob("*.py") if re.search(r"^__version__\s*=\s*['\"]", p.read_text(), re.M)]
    if "version" in meta["project"].get("dynamic", []):
        source = folder / meta["tool"]["hatch"]["version"]["path"]
        assert assigned == [source], f"the version lives in {source} only"
    else:
        assert re.fullmatch(r"\d+\.\d+\.\d+", meta["project"]["version"])
        assert assigned == [], "a static version in pyproject.toml is the one place; read it from metadata"


@pytest.mark.parametrize("folder", PACKAGES, ids=lambda p: p.name)
def test_dependencies_have_ranges(folder: Path):
    info = project(folder)["project"]
    requirements = list(info.get("dependencies", []))
    requirements += [r for extra in info.get("optional-dependencies", {}).values() for r in extra]
    for requirement in requirements:
        name = re.split(r"[\[<>=~!; ]", requirement, maxsplit=1)[0]
        assert LOWER.search(requirement), f"{folder.name}: {requirement!r} needs a lower bound (>=X.Y)"
        if name == "crab-core":
            assert "<" in requirement, f"{folder.name}: {requirement!r} needs an upper bound (<1)"


@pytest.mark.parametrize("folder", PLUGINS, ids=lambda p: p.name)
def test_the_plugin_is_an_entry_point_with_an_api_range(folder: Path):
    meta = project(folder)
    entry_points = meta["project"]["entry-points"]["crab"]
    assert list(entry_points) == [folder.name], "one entry point, named after the folder"
    module, _, attr = entry_points[folder.name].partition(":")
    assert module == package_of(folder) and (not attr or attr.isidentifier()), "the package, or a class in it"
    assert any(r.startswith("crab-core") for r in meta["project"]["dependencies"])
    init = (folder / "src" / package_of(folder) / "__init__.py").read_text()
    assert re.search(r'^CRAB_API = "[^"]+"', init, re.M), 'declare CRAB_API = ">=0.1,<0.2" (a string)'


@pytest.mark.parametrize("folder", [*KITS, *PLUGINS], ids=lambda p: p.name)
def test_the_test_extra_names_crab_testing(folder: Path):
    # crab.testing is crab-testing's, not crab-core's: a package's tests get it from its test extra
    # (.ci/run installs that extra, crab-testing from testing/, in each package's own venv).
    test = project(folder)["project"].get("optional-dependencies", {}).get("test", [])
    assert any(r.startswith("crab-testing>=") for r in test), f'{folder.name}: add "crab-testing>=0.1.0,<0.2" to test'


def test_crab_testing_is_released_with_crab_core():
    # It drives core's private modules, so it follows core's 0.x minor and depends on exactly that.
    info = project(TESTING)["project"]
    core_version = re.search(r'__version__ = "([^"]+)"', (ROOT / "core/src/crab/_version.py").read_text())
    assert core_version is not None and info["version"] == core_version.group(1)
    major, minor = info["version"].split(".")[:2]
    assert f"crab-core>={info['version']},<{major}.{int(minor) + 1}" in info["dependencies"]
    assert info["entry-points"] == {"pytest11": {"crab": "crab.testing.pytest_plugin"}}
    assert "entry-points" not in project(ROOT / "core")["project"] or "pytest11" not in project(ROOT / "core")[
        "project"
    ].get("entry-points", {})


@pytest.mark.parametrize("folder", KITS, ids=lambda p: p.name)
def test_a_kit_is_a_library_of_crabs_public_api_with_no_entry_point(folder: Path):
    import ast

    meta = project(folder)["project"]
    assert folder.name.endswith("-kit") and "entry-points" not in meta, "a kit registers nothing: no entry point"
    assert any(r.startswith("crab-core") for r in meta["dependencies"])
    own = package_of(folder)
    private = []
    for path in sorted((folder / "src").rglob("*.py")) + sorted((folder / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            private += [
                f"{path.relative_to(ROOT)}:{node.lineno}: {name}"
                for name in names
                if name and name.split(".")[0] == "crab" and name not in PUBLIC
            ]
    assert private == [], "a kit imports only crab, crab.processes and crab.testing (docs/api.md)"
    readme = (folder / "README.md").read_text()
    assert readme.startswith(f"# crab-{folder.name}\n") and f"pip install crab-{folder.name}" in readme
    assert f"import {own}" in readme or f"from {own} import" in readme, "give one example using the kit"


@pytest.mark.parametrize("folder", PLUGINS, ids=lambda p: p.name)
def test_the_readme_says_what_how_to_install_its_settings_and_an_example(folder: Path):
    text = (folder / "README.md").read_text()
    assert text.startswith(f"# crab-{folder.name}\n")
    assert "## Install" in text and (f"pip install crab-{folder.name}" in text or "crab plugins install" in text)
    assert re.search(r"```(sh|console)\n[^`]*\bcrab ", text), "give one example: a ```sh block running crab"
    block = readme_block(text)
    assert block is not None, f"add the config keys block: python {Path(__file__).relative_to(ROOT)}"
    assert block == config_keys_block(folder.name), f"regenerate: python {Path(__file__).relative_to(ROOT)}"


@pytest.mark.slow
@pytest.mark.xdist_group("distribution")  # builds what test_distribution installs: one worker, once
def test_every_package_builds_a_wheel_and_an_sdist(repo_builds: tuple[Path, Path]):
    """Built with hatchling from requirements-dev.txt, without isolation, so offline (tests/conftest.py)."""
    wheels, sdists = repo_builds
    for folder in PACKAGES:
        info = project(folder)["project"]
        stem = info["name"].replace("-", "_")
        [wheel] = wheels.glob(f"{stem}-*.whl")
        names = zipfile.ZipFile(wheel).namelist()
        package = package_of(folder)
        assert f"{package}/py.typed" in names and f"{package}/__init__.py" in names
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
        metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        assert f"\nName: {info['name']}\n" in metadata and "\nLicense-Expression: " in metadata
        if folder in PLUGINS:
            points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
            assert f"[crab]\n{folder.name} = {package}" in points
        elif folder in KITS:
            assert not any(n.endswith("entry_points.txt") for n in names), "a kit has no entry point"
        [archive] = sdists.glob(f"{stem}-*.tar.gz")
        members = {m.split("/", 1)[1] for m in tarfile.open(archive).getnames() if "/" in m}
        assert {"pyproject.toml", "README.md", "LICENSE", f"src/{package}/__init__.py"} <= members, members
    assert sorted(w.name for w in wheels.iterdir()) == sorted(w.name for w in wheels.glob("*.whl"))
    assert len(list(wheels.iterdir())) == len(list(sdists.iterdir())) == len(PACKAGES) + 1, "one of each per package"
    core = zipfile.ZipFile(next(wheels.glob("crab_core-*.whl"))).namelist()
    assert "crab/templates/plugin/tool/tools.py.tmpl" in core  # what `crab plugin new` renders from
    # Installing crab-core registers no pytest plugin and ships no test kit: crab-testing does both.
    assert not any(n.startswith("crab/testing/") for n in core), "crab.testing is crab-testing's"
    assert not any(
        n.endswith("entry_points.txt") and b"pytest11" in zipfile.ZipFile(next(wheels.glob("crab_core-*.whl"))).read(n)
        for n in core
    )
    testing_wheel = zipfile.ZipFile(next(wheels.glob("crab_testing-*.whl")))
    kit = testing_wheel.namelist()
    assert "crab/testing/__init__.py" in kit and "crab/testing/pytest_plugin.py" in kit
    assert "crab/__init__.py" not in kit, "crab-core owns the crab package"
    points = testing_wheel.read(next(n for n in kit if n.endswith("entry_points.txt"))).decode()
    assert "[pytest11]\ncrab = crab.testing.pytest_plugin" in points
    mock = zipfile.ZipFile(next(wheels.glob("crab_provider_mock-*.whl"))).namelist()
    assert "crab_provider_mock/scripts/tour.json" in mock  # `-m mock/tour` for pip users


def write_readme_blocks() -> None:
    """Put (or refresh) the generated config keys block in every plugin README."""
    for folder in PLUGINS:
        path = folder / "README.md"
        text = path.read_text()
        block = config_keys_block(folder.name)
        old = readme_block(text)
        if old is None:
            raise SystemExit(f"{path}: add the two marker lines under ## Configuration, then run this again")
        path.write_text(text.replace(old, block))
        print(f"{path.relative_to(ROOT)}: config keys written")


if __name__ == "__main__":
    write_readme_blocks()
