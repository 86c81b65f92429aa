"""The README's quickstart: the scripted tour runs real tools on this repository, with no API key."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_tour_runs_real_tools(tmp_path: Path):
    readme = (ROOT / "README.md").read_text()
    assert 'crab run -m mock/examples/tour.json "Give me a tour of this repository"' in readme
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(tmp_path), CRAB_PLUGINS="provider-mock,tools-basic")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "crab",
            "run",
            "-m",
            "mock/examples/tour.json",
            "-o",
            "json",
            "Give me a tour of this repository",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["stop"] == "end"
    calls = {c["name"]: c for c in doc["tool_calls"]}
    assert set(calls) == {"ls", "grep", "read"}
    assert not any(c["is_error"] for c in calls.values()), calls
    assert "core/" in calls["ls"]["result"]
    assert "def crab_tools" in calls["grep"]["result"]
    assert "# crab" in calls["read"]["result"]


def test_the_packaged_tour_runs_real_tools_in_any_folder(tmp_path: Path):
    """``-m mock/tour`` ships in crab-provider-mock, so a pip user needs no file of their own."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("# notes\nTODO: write more\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(tmp_path / "home"), CRAB_PLUGINS="provider-mock,tools-basic")
    result = subprocess.run(
        [sys.executable, "-m", "crab", "run", "-m", "mock/tour", "-o", "json", "Give me a tour of this folder"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    calls = {c["name"]: c for c in doc["tool_calls"]}
    assert set(calls) == {"ls", "glob", "grep"}
    assert not any(c["is_error"] for c in calls.values()), calls
    assert "notes.md:2:TODO: write more" in calls["grep"]["result"]
    assert "scripted tour" in doc["text"]


# --- installing from the checkout: every command the docs give names the kits it needs -------------

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCS += sorted(ROOT.glob("plugins/*/README.md")) + sorted(ROOT.glob("kits/*/README.md"))
INSTALL = re.compile(r"(?:pip install|crab plugins install)((?:\s+(?:-[eUq]|['\"]?\./[\w./*\-\[\],]+['\"]?))+)")
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?")


def local_packages() -> dict[str, Path]:
    """Each distribution of this checkout by name: crab-core, crab-testing, the plugins, the kits."""
    found = {}
    for pyproject in [ROOT / "core" / "pyproject.toml", ROOT / "testing" / "pyproject.toml"]:
        found[tomllib.loads(pyproject.read_text())["project"]["name"]] = pyproject.parent
    for pyproject in ROOT.glob("plugins/*/pyproject.toml"):
        found[tomllib.loads(pyproject.read_text())["project"]["name"]] = pyproject.parent
    for pyproject in ROOT.glob("kits/*/pyproject.toml"):
        found[tomllib.loads(pyproject.read_text())["project"]["name"]] = pyproject.parent
    return found


def local_requirements(folder: Path, packages: dict[str, Path]) -> set[str]:
    """The distributions of this checkout that installing ``folder`` needs, transitively (extras too)."""
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    needed: set[str] = set()
    for requirement in project.get("dependencies", []):
        match = REQUIREMENT.match(requirement)
        assert match, requirement
        name = match.group(1)
        if name not in packages:
            continue
        needed.add(name)
        needed |= local_requirements(packages[name], packages)
        for extra in (match.group(2) or "[]").strip("[]").split(","):
            for inner in (
                tomllib.loads((packages[name] / "pyproject.toml").read_text())["project"]
                .get("optional-dependencies", {})
                .get(extra.strip(), [])
            ):
                inner_name = REQUIREMENT.match(inner).group(1)  # type: ignore[union-attr]
                if inner_name in packages:
                    needed.add(inner_name)
                    needed |= local_requirements(packages[inner_name], packages)
    return needed


def test_every_install_from_the_checkout_names_the_kits_it_needs():
    """``pip install ./plugins/provider-openai`` alone asks the index for crab-provider-kit, which is not
    there (crab is not on PyPI; a package of that name there would not be crab's)."""
    packages = local_packages()
    by_folder = {folder.relative_to(ROOT).as_posix(): name for name, folder in packages.items()}
    wrong = []
    for doc in DOCS:
        for match in INSTALL.finditer(doc.read_text()):
            paths = [p.strip("'\"").split("[")[0].removeprefix("./").rstrip("/") for p in match.group(1).split()]
            named = {by_folder[p] for p in paths if p in by_folder}
            needed = set().union(*(local_requirements(packages[n], packages) for n in named)) if named else set()
            missing = sorted(needed - named - {"crab-core"})
            if missing:
                wrong.append(f"{doc.relative_to(ROOT)}: {match.group(0).strip()!r} also needs {missing}")
    assert not wrong, "\n".join(wrong)


def test_the_readme_builds_the_kits_wheels_too():
    """Installed by name with --no-index, crab-tools-web and the providers need the kits' wheels."""
    readme = (ROOT / "README.md").read_text()
    wheel_line = re.search(r"pip wheel --no-deps -w wheels [^`]*", readme)
    assert wheel_line and "./kits/*" in wheel_line.group(0), wheel_line
