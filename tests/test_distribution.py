"""The path users take: wheels in an empty virtual environment, installed by name with no index.

Wheels of crab's packages are built once per session by hatchling's PEP 517 hooks, without
isolation (tests/conftest.py ``repo_builds``, shared with test_plugin_packages; hatchling comes
from requirements-dev.txt, so building needs no network); a plugin's own wheels here are built as
an author would, with ``pip wheel --no-deps --no-build-isolation``. Their
third-party dependencies (pluggy, typer, tomlkit, ripgrep, pytest…) are not crab's to build:
``pip download`` fetches them into the same wheel folder from the package index (pip's cache
makes that quick after the first run; the test skips with one line when no index can be
reached). Everything after that is offline: one fresh venv (reused by the tests of this module,
to save time) gets ``crab-core crab-tools-basic crab-provider-mock`` and the kits BY NAME with
``--no-index --find-links``, then runs the packaged tour, every kind of ``crab plugin new`` with
its own tests, the kits, crab-core alone (no pytest plugin), and ``crab plugins
install``/``uninstall`` beside a broken plugin.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import venv
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("distribution")]  # one worker builds the wheels and venv

ROOT = Path(__file__).resolve().parents[1]
KITS = sorted(p for p in (ROOT / "kits").iterdir() if (p / "pyproject.toml").is_file())
KIT_NAMES = [f"crab-{kit.name}" for kit in KITS]
KINDS = ["tool", "provider", "store", "channel", "renderer", "command"]


def run(args: list[str | Path], *, timeout: float = 600, **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kwargs)  # type: ignore[call-overload]
    return result  # type: ignore[no-any-return]


def build_wheels(folders: list[Path], out: Path) -> None:
    """Wheels of these projects, built with the dev venv's hatchling (no isolation, no network)."""
    result = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", out, *folders])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def offline_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment with no crab settings, no pip configuration (so no index) and ``CRAB_HOME=home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "PIP_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(CRAB_HOME=str(home), PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory, repo_builds: tuple[Path, Path]) -> Path:
    house = tmp_path_factory.mktemp("wheelhouse")
    stems = ["crab_core", "crab_testing", "crab_provider_mock", "crab_tools_basic"]
    stems += [n.replace("-", "_") for n in KIT_NAMES]
    for stem in stems:  # only these: the other plugins are not what a pip user installs here
        [wheel] = repo_builds[0].glob(f"{stem}-*.whl")
        shutil.copy(wheel, house)
    ours = sorted(house.glob("*.whl"))
    assert sorted(w.name.split("-")[0] for w in ours) == sorted(stems)
    fetched = run([sys.executable, "-m", "pip", "download", "-q", "-d", house, *ours, "pytest", "hypothesis"])
    if fetched.returncode != 0:
        pytest.skip(f"pip download of crab's dependencies failed (no package index?): {fetched.stderr[-300:]}")
    return house


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path) -> Path:
    """An empty venv with crab-core, crab-tools-basic, crab-provider-mock and the kits installed by name, offline."""
    root = tmp_path_factory.mktemp("fresh")
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    pip = root / "venv" / "bin" / "pip"
    names = ["crab-core", "crab-tools-basic", "crab-provider-mock", *KIT_NAMES, "pytest", "hypothesis"]
    result = run([pip, "install", "--no-index", "--find-links", wheelhouse, *names], env=offline_env(root))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return root / "venv" / "bin"


def test_pip_users_install_by_name_and_run_the_packaged_tour(fresh: Path, tmp_path: Path):
    env = offline_env(tmp_path / "home")
    version = run([fresh / "crab", "--version"], env=env)
    assert version.returncode == 0, version.stderr
    lines = version.stdout.splitlines()
    assert lines[0].startswith("crab 0.")
    assert any(line.split()[:1] == ["crab-tools-basic"] and "(tools-basic)" in line for line in lines[1:]), lines
    assert any(line.split()[:1] == ["crab-provider-mock"] for line in lines[1:]), lines
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("# notes\nTODO: ship it\n")
    result = run(
        [fresh / "crab", "run", "--provider", "mock", "-m", "mock/tour", "-o", "json", "tour"], env=env, cwd=work
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    calls = {c["name"]: c for c in doc["tool_calls"]}
    assert set(calls) == {"ls", "glob", "grep"} and not any(c["is_error"] for c in calls.values()), calls
    assert "notes.md:2:TODO: ship it" in calls["grep"]["result"]
    # The doctor's hint for the mock provider names the packaged tour, which a pip user has.
    doctor = run(
        [fresh / "crab", "doctor", "--plugins", "provider-mock"], env={**env, "CRAB_PROVIDER": "mock"}, cwd=work
    )
    assert "-m mock/tour" in doctor.stdout + doctor.stderr


def test_every_kind_of_crab_plugin_new_installs_and_passes_its_own_tests(
    fresh: Path, wheelhouse: Path, tmp_path: Path, hatchling_builder: Callable[..., None]
):
    env = offline_env(tmp_path / "home")
    folders = []
    for kind in KINDS:
        result = run([fresh / "crab", "plugin", "new", f"ex-{kind}", "--kind", kind], env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        folders.append(tmp_path / f"crab-ex-{kind}")
    kinds_house = tmp_path / "wheels"
    hatchling_builder(folders, kinds_house)  # one interpreter for six; pip wheel builds the scaffold below
    names = [f"crab-ex-{kind}" for kind in KINDS]
    links = ["--find-links", wheelhouse, "--find-links", kinds_house]
    installed = run([fresh / "pip", "install", "--no-index", *links, *names], env=env)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    tests = run(
        [fresh / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=importlib", *folders],
        env=env,
        cwd=tmp_path,
    )
    assert tests.returncode == 0, tests.stdout[-5000:]
    assert " passed" in tests.stdout.splitlines()[-1]
    listed = run([fresh / "crab", "plugins", "list", "--json"], env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    status = {p["name"]: p["status"] for p in json.loads(listed.stdout)}
    assert all(status.get(f"ex-{kind}") == "loaded" for kind in KINDS), status
    removed = run([fresh / "pip", "uninstall", "-y", *names], env=env)
    assert removed.returncode == 0, removed.stderr


def test_the_kits_install_by_name_and_pass_their_tests(fresh: Path, tmp_path: Path):
    env = offline_env(tmp_path / "home")
    tests = run(
        [fresh / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=importlib", *KITS],
        env=env,
        cwd=tmp_path,
    )
    assert tests.returncode == 0, tests.stdout[-5000:]
    # Their old homes in crab (API 1.x shims) are gone since crab-core 0.1: plain import errors.
    gone = (
        "import importlib, crab_provider_kit, crab_sql_kit, crab_jobs_kit\n"
        "for old in ('crab.provider_kit', 'crab.jobs', 'crab.store_rows'):\n"
        "    try: importlib.import_module(old)\n"
        "    except ModuleNotFoundError: print('gone')\n"
    )
    result = run([fresh / "python", "-W", "error", "-c", gone], env=env, cwd=tmp_path)
    assert (result.returncode, result.stdout.split()) == (0, ["gone"] * 3), result.stderr


def test_crab_core_alone_registers_no_pytest_plugin(fresh: Path, wheelhouse: Path, tmp_path: Path):
    # crab-core by itself adds nothing to its users' pytest runs; crab-testing (crab.testing and
    # the fixtures) is what registers one, and a plugin's test extra names it.
    root = tmp_path / "core-alone"
    venv.EnvBuilder(with_pip=True).create(root)
    env = offline_env(tmp_path / "home")
    installed = run([root / "bin" / "pip", "install", "--no-index", "--find-links", wheelhouse, "crab-core"], env=env)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    probe = (
        "import importlib.metadata as m, importlib.util as u;"
        "print(sorted(d.metadata['Name'] for d in m.distributions() if d.metadata['Name'].startswith('crab')),"
        " [e.value for e in m.entry_points(group='pytest11')], u.find_spec('crab.testing') is None)"
    )
    alone = run([root / "bin" / "python", "-c", probe], env=env)
    assert alone.stdout.strip() == "['crab-core'] [] True", alone.stdout + alone.stderr
    # Beside crab-provider-mock (which depends on crab-testing) the fixtures are there.
    beside = run([fresh / "python", "-c", probe], env=env)
    assert "'crab.testing.pytest_plugin'" in beside.stdout and beside.stdout.strip().endswith("False"), beside.stdout


BROKEN_PYPROJECT = """\
[project]
name = "crab-broken-demo"
version = "0.0.1"

[project.entry-points.crab]
broken-demo = "crab_broken_demo"

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["crab_broken_demo"]
"""


def test_plugins_install_and_uninstall_work_beside_a_broken_plugin(fresh: Path, wheelhouse: Path, tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    broken = tmp_path / "broken"
    (broken / "crab_broken_demo").mkdir(parents=True)
    (broken / "pyproject.toml").write_text(BROKEN_PYPROJECT)
    (broken / "crab_broken_demo" / "__init__.py").write_text("raise ImportError('this plugin is broken on purpose')\n")
    mine = tmp_path / "crab-ex-installed"
    env = offline_env(home, PIP_FIND_LINKS=str(wheelhouse))
    assert (
        run([fresh / "crab", "plugin", "new", "ex-installed", "--kind", "command", "--dir", mine], env=env).returncode
        == 0
    )
    house = tmp_path / "wheels"
    build_wheels([broken, mine], house)
    assert (
        run([fresh / "pip", "install", "--no-index", "--find-links", house, "crab-broken-demo"], env=env).returncode
        == 0
    )
    config = home / "config.toml"
    config.write_text('# mine\n[plugins]\nenabled = ["provider-mock", "broken-demo"]  # keep this comment\n')
    try:
        [wheel] = house.glob("crab_ex_installed-*.whl")
        installed = run([fresh / "crab", "plugins", "install", wheel], env=env, cwd=tmp_path)
        assert installed.returncode == 0, installed.stdout + installed.stderr
        assert f"installed plugin ex-installed (crab-ex-installed 0.1.0); enabled in {config}" in installed.stdout
        recorded = tomllib.loads(config.read_text())["plugins"]["enabled"]
        assert recorded == ["provider-mock", "broken-demo", "ex-installed"]
        # Installing it again (an author reinstalling after an edit) is not "adds no crab plugin".
        reinstalled = run([fresh / "crab", "plugins", "install", wheel], env=env, cwd=tmp_path)
        assert reinstalled.returncode == 0, reinstalled.stdout + reinstalled.stderr
        assert "installed plugin ex-installed (crab-ex-installed 0.1.0)" in reinstalled.stdout
        assert tomllib.loads(config.read_text())["plugins"]["enabled"] == recorded
        assert "# keep this comment" in config.read_text()
        listed = run([fresh / "crab", "plugins", "list", "--json"], env=env, cwd=tmp_path)
        status = {p["name"]: p["status"] for p in json.loads(listed.stdout)}
        assert status["ex-installed"] == "loaded" and status["broken-demo"] == "failed", status
        # A bare plugin name means its crab- distribution, found here in the local wheel folder.
        again = run(
            [fresh / "crab", "plugins", "install", "--upgrade", "ex-installed"],
            env={**env, "PIP_FIND_LINKS": str(house)},
            cwd=tmp_path,
        )
        assert again.returncode == 0, again.stdout + again.stderr
        assert "$ python -m pip install --upgrade crab-ex-installed" in again.stderr
        removed = run([fresh / "crab", "plugins", "uninstall", "ex-installed"], env=env, cwd=tmp_path)
        assert removed.returncode == 0, removed.stdout + removed.stderr
        assert f"uninstalled plugin ex-installed (crab-ex-installed); removed from {config}" in removed.stdout
        assert tomllib.loads(config.read_text())["plugins"]["enabled"] == ["provider-mock", "broken-demo"]
        gone = run([fresh / "python", "-m", "pip", "show", "crab-ex-installed"], env=env)
        assert gone.returncode != 0
        unknown = run([fresh / "crab", "plugins", "uninstall", "no-such-plugin"], env=env, cwd=tmp_path)
        assert unknown.returncode == 2
        assert unknown.stderr.strip().splitlines()[-1].startswith("crab: no installed plugin or distribution")
        # A bare name never installs an unrelated package of that name: `pytest` means crab-pytest.
        bare = run([fresh / "crab", "plugins", "install", "pytest"], env=env, cwd=tmp_path)
        assert bare.returncode == 1 and "$ python -m pip install crab-pytest" in bare.stderr
        assert (
            bare.stderr.strip().splitlines()[-1].startswith("crab: pip install failed (exit 1); nothing was recorded")
        )
        [pytest_wheel] = wheelhouse.glob("pytest-*.whl")
        not_a_plugin = run([fresh / "crab", "plugins", "install", pytest_wheel], env=env, cwd=tmp_path)
        assert not_a_plugin.returncode == 2
        assert "adds no crab plugin" in not_a_plugin.stderr
    finally:
        run([fresh / "pip", "uninstall", "-y", "crab-broken-demo", "crab-ex-installed"], env=env)
