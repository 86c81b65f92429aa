"""``crab._host.entry_points`` lists what ``importlib.metadata`` lists, from the same files, for every
way a distribution is installed; and asks ``importlib.metadata`` where it cannot read them itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata as importlib_metadata
from importlib.metadata import entry_points as importlib_entry_points
from pathlib import Path
from typing import Any

import editables
import pytest
from crab._host.entry_points import entry_points, parse_entry_points

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("entrypoints")]  # one worker builds the module's venv


def dist_info(site: Path, folder: str, name: str, version: str, entry_points_txt: str | None) -> None:
    path = site / folder
    path.mkdir(parents=True)
    (path / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nName: not-this\n")
    if entry_points_txt is not None:
        (path / "entry_points.txt").write_text(entry_points_txt)


def as_tuples(eps) -> list[tuple[str, str, str, str]]:
    return sorted((ep.name, ep.value, ep.dist.name, ep.dist.version) for ep in eps)


def test_folders_in_path_order_first_copy_of_a_distribution_wins(tmp_path: Path):
    first, second = tmp_path / "first", tmp_path / "second"
    dist_info(first, "crab_one-1.0.dist-info", "crab-one", "1.0", "[crab]\none = crab_one\n\n[other]\nx = y\n")
    dist_info(first, "crab_two-2.0.dist-info", "crab-two", "2.0", "# comment\n[crab]\ntwo = crab_two:plugin [extra]\n")
    dist_info(first, "plain-3.0.dist-info", "plain", "3.0", None)
    dist_info(second, "crab_one-0.9.dist-info", "crab-one", "0.9", "[crab]\none = old_one\n")  # shadowed
    dist_info(second, "Crab.Egg-1.0.egg-info", "Crab.Egg", "1.0", "[crab]\negg = crab_egg\n")
    (tmp_path / "a-file").write_text("")
    paths = [str(first), str(second), str(tmp_path / "missing"), str(tmp_path / "a-file")]
    assert as_tuples(entry_points("crab", paths)) == [
        ("egg", "crab_egg", "Crab.Egg", "1.0"),
        ("one", "crab_one", "crab-one", "1.0"),
        ("two", "crab_two:plugin [extra]", "crab-two", "2.0"),
    ]


def test_the_installed_plugins_are_what_importlib_metadata_lists():
    assert as_tuples(entry_points("crab")) == as_tuples(importlib_entry_points(group="crab"))


def test_load_imports_the_target_and_walks_attributes(tmp_path: Path, monkeypatch):
    (tmp_path / "crab_fake_target.py").write_text("class plugin:\n    inner = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    (ep,) = parse_entry_points("[crab]\nx = crab_fake_target:plugin.inner [extra]\n", "crab")
    assert ep.load() == 42


def test_malformed_lines_are_skipped():
    text = "[crab]\nno equals sign\n = nothing\nname =\n[crab\nok = module\n"
    assert [(ep.name, ep.value) for ep in parse_entry_points(text, "crab")] == [("ok", "module")]


# --- the differential test: real installs, both listings compared in a fresh interpreter -------
# Each distribution is built by hatchling and installed by pip the way users install plugins;
# where an installer writes metadata folders itself (an old setuptools' egg-info, a folder name
# in another case), they are written by hand the same way. A child interpreter of a throwaway
# venv lists them twice, with crab's reader (loaded from its file, so crab is not installed there)
# and with importlib.metadata, and the two lists must be equal, order included.

ENTRY_POINTS_FILE = Path(__file__).resolve().parents[1] / "src" / "crab" / "_host" / "entry_points.py"

COMPARE = """
import importlib.util, json, sys
from importlib.metadata import entry_points as standard
spec = importlib.util.spec_from_file_location("crab_reader", sys.argv[1])
reader = sys.modules["crab_reader"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reader)
def rows(eps):
    return [[ep.name, ep.value, ep.group, ep.dist.name, ep.dist.version] for ep in eps]
found = {"crab": rows(reader.entry_points("crab")), "importlib": rows(standard(group="crab"))}
finders = [getattr(f, "__name__", type(f).__name__) for f in sys.meta_path]
print(json.dumps({**found, "asked_importlib": reader._needs_importlib(sys.path), "finders": finders}))
"""


def pip(*args: str, python: Path | None = None) -> None:
    """Run this venv's pip (``python``: install into that interpreter's environment instead)."""
    into = ["--python", str(python)] if python else []
    done = subprocess.run(
        [sys.executable, "-m", "pip", *into, "--disable-pip-version-check", "-q", *args], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]


def project(root: Path, name: str, version: str, *, exact: bool = False) -> Path:
    """A tiny hatchling project ``name`` with one ``crab`` entry point (``dev-mode-exact`` makes
    hatchling's editable install a finder hook instead of a ``.pth`` path line)."""
    package = name.replace("-", "_").replace(".", "_").lower()
    folder = root / f"{package}-{version}"
    (folder / "src" / package).mkdir(parents=True)
    (folder / "src" / package / "__init__.py").write_text(f'VERSION = "{version}"\n')
    wheel = f'[tool.hatch.build.targets.wheel]\npackages = ["src/{package}"]\n'
    if exact:
        wheel += "dev-mode-exact = true\n"
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\n\n'
        f'[project.entry-points.crab]\n{package.removeprefix("crab_diff_")} = "{package}"\n'
        f'[project.entry-points.other]\nnot-crab = "{package}:x"\n\n{wheel}'
    )
    return folder


def wheel(root: Path, name: str, version: str) -> Path:
    out = root / "wheels"
    pip("wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", str(out), str(project(root, name, version)))
    (built,) = out.glob(f"{name.replace('-', '_').replace('.', '_').lower()}-{version}-*.whl")
    return built


def editable(root: Path, name: str, version: str, *, exact: bool = False) -> Path:
    """The wheel ``pip install -e`` installs: pip asks the backend's PEP 660 ``build_editable`` for it."""
    folder, out = project(root, name, version, exact=exact), root / "editable"
    out.mkdir(exist_ok=True)
    build = "import sys, hatchling.build as backend; print(backend.build_editable(sys.argv[1]))"
    made = subprocess.run([sys.executable, "-c", build, str(out)], cwd=folder, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr[-3000:]
    return out / made.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A venv without pip (pip runs from outside with ``--python``); returns (python, site-packages)."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "env")], check=True)
    python = root / "env" / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], text=True
        ).strip()
    )
    return python, site


def listings(python: Path, pythonpath: list[Path]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    done = subprocess.run([str(python), "-c", COMPARE, str(ENTRY_POINTS_FILE)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_crab_lists_what_importlib_metadata_lists_for_every_way_of_installing(venv, tmp_path: Path):
    python, site = venv
    target = ["install", "--no-deps", "--no-index"]
    pip(*target, str(wheel(tmp_path, "crab-diff-wheel", "1.0")), python=python)
    pip(*target, str(editable(tmp_path, "crab-diff-pth", "1.0")), python=python)
    pip(*target, str(editable(tmp_path, "crab-diff-exact", "1.0", exact=True)), python=python)
    # The finder hook imports the editables package at start-up: its code alone, copied from this
    # venv (it is no distribution of the throwaway one, so neither listing should show it).
    shutil.copytree(Path(editables.__file__).parent, site / "editables")
    pip(*target, str(wheel(tmp_path, "crab-diff-twice", "0.5")), python=python)  # shadowed by both folders below
    first, second = tmp_path / "first", tmp_path / "second"
    pip("install", "--no-deps", "--no-index", "--target", str(first), str(wheel(tmp_path, "crab-diff-twice", "2.0")))
    pip("install", "--no-deps", "--no-index", "--target", str(second), str(wheel(tmp_path, "crab-diff-twice", "1.0")))
    # One distribution under folder names differing in case and separators: the first on the path wins.
    dist_info(first, "CRAB.Diff_Case-2.0.dist-info", "CRAB.Diff_Case", "2.0", "[crab]\ncase = first_case\n")
    dist_info(second, "crab_diff_case-1.0.dist-info", "crab-diff-case", "1.0", "[crab]\ncase = second_case\n")
    # What setuptools' develop and old distutils write, and entry_points.txt the way importlib reads it.
    dist_info(second, "crab_diff_egg.egg-info", "crab-diff-egg", "0.1", "[crab]\negg = crab_diff_egg\n")
    (second / "PKG-INFO").mkdir()  # a folder of that name is no distribution to either
    dist_info(
        second,
        "crab_diff_text-1.0.DIST-INFO",
        "crab-diff-text",
        "1.0",
        "# comment\n\n[other]\na = b\n[crab]\n  spaced  =  mod:obj [extra]  \n; semi = colon\n[ crab ]\nnot = this\n",
    )

    found = listings(python, [first, second])
    assert found["asked_importlib"] is False  # the folders were read by crab's reader itself
    assert "RedirectingFinder" in found["finders"]  # with hatchling's finder hook in place
    assert found["crab"] == found["importlib"]
    names = {(row[0], row[3], row[4]) for row in found["crab"]}
    assert {
        ("wheel", "crab-diff-wheel", "1.0"),
        ("pth", "crab-diff-pth", "1.0"),
        ("exact", "crab-diff-exact", "1.0"),
        ("twice", "crab-diff-twice", "2.0"),
        ("case", "CRAB.Diff_Case", "2.0"),
        ("egg", "crab-diff-egg", "0.1"),
        ("spaced", "crab-diff-text", "1.0"),
        ("; semi", "crab-diff-text", "1.0"),
    } == names
    finders = list(site.glob("_editable_impl_crab_diff_exact*"))
    assert any(f.suffix == ".py" for f in finders), "hatchling wrote no finder hook for dev-mode-exact"
    swapped = listings(python, [second, first])  # now the older copies come first, and win
    assert swapped["crab"] == swapped["importlib"]
    assert ("twice", "crab-diff-twice", "1.0") in {(row[0], row[3], row[4]) for row in swapped["crab"]}


def test_a_zipped_distribution_is_listed_through_importlib_metadata(venv, tmp_path: Path):
    python, _ = venv
    built = wheel(tmp_path, "crab-diff-zipped", "3.0")  # a wheel is a zip: put it on the path as is
    egg = tmp_path / "crab_diff_egg-1.0-py3.11.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: crab-diff-egg\nVersion: 1.0\n")
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[crab]\negg = crab_diff_egg\n")
    found = listings(python, [built, egg])
    assert found["asked_importlib"] is True
    assert found["crab"] == found["importlib"]
    assert listings(python, [egg])["asked_importlib"] is True  # an .egg alone is enough
    assert {(row[0], row[3]) for row in found["crab"]} >= {("zipped", "crab-diff-zipped"), ("egg", "crab-diff-egg")}


class _OneDistribution(importlib_metadata.Distribution):
    """What an unusual finder hands importlib.metadata: a distribution with no folder on sys.path."""

    def read_text(self, filename: str) -> str | None:
        return {
            "METADATA": "Metadata-Version: 2.1\nName: crab-diff-found\nVersion: 4.0\n",
            "entry_points.txt": "[crab]\nfound = crab_diff_found\n",
        }.get(filename)

    def locate_file(self, path: Any) -> Any:
        return Path(path)


class _Finder:
    @staticmethod
    def find_distributions(context: Any = None) -> Iterator[importlib_metadata.Distribution]:
        yield _OneDistribution()


def test_a_finder_of_distributions_on_meta_path_is_asked_through_importlib_metadata(monkeypatch):
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, _Finder()])
    ours = as_tuples(entry_points("crab"))
    assert ("found", "crab_diff_found", "crab-diff-found", "4.0") in ours
    assert ours == as_tuples(importlib_entry_points(group="crab"))
