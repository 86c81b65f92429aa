"""Benchmark: CPU per listing of a 20k-file tree under realistic .gitignore files, pathspec against
the hand-written matcher it replaced.

Run as ``.venv/bin/python bench/gitignore.py [--baseline main] [--files 20000] [--repeat 5]``.
The baseline is the ``gitignore.py`` and ``walk.py`` of another revision (``git show``), loaded
as a private package beside this checkout's in the same process, so both walk the same tree
side by side; the figures that matter are the ratios (this checkout over the baseline). The
tree is a monorepo-like mix: Python packages with ``__pycache__``, a Node front-end with
``node_modules`` and ``dist``, logs, editor files, nested .gitignore files, an
``info/exclude`` and a global excludes file (only this checkout reads those two). Also timed:
compiling the rules, one ``ls`` of a big folder, and a hostile rule against a long name.
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path

from crab_tools_basic import gitignore, walk

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PACKAGE = "plugins/tools-basic/src/crab_tools_basic"

# Parts of GitHub's Python and Node .gitignore templates, as real repositories carry them.
ROOT_RULES = """\
# Byte-compiled / optimized / DLL files
__pycache__/
*.py[cod]
*$py.class
*.so
.Python
build/
develop-eggs/
dist/
downloads/
eggs/
.eggs/
/lib/
lib64/
parts/
sdist/
var/
wheels/
*.egg-info/
.installed.cfg
*.egg
MANIFEST
*.manifest
*.spec
pip-log.txt
pip-delete-this-directory.txt
htmlcov/
.tox/
.nox/
.coverage
.coverage.*
.cache
nosetests.xml
coverage.xml
*.cover
*.py,cover
.hypothesis/
.pytest_cache/
*.mo
*.pot
*.log
local_settings.py
db.sqlite3
db.sqlite3-journal
instance/
.webassets-cache
.scrapy
docs/_build/
.pybuilder/
target/
.ipynb_checkpoints
profile_default/
ipython_config.py
.pdm.toml
__pypackages__/
celerybeat-schedule
celerybeat.pid
*.sage.py
.env
.venv
env/
venv/
ENV/
env.bak/
venv.bak/
.spyderproject
.spyproject
.ropeproject
/site
.mypy_cache/
.dmypy.json
dmypy.json
.pyre/
.pytype/
cython_debug/
node_modules/
npm-debug.log*
yarn-debug.log*
yarn-error.log*
lerna-debug.log*
.pnpm-debug.log*
report.[0-9]*.[0-9]*.[0-9]*.[0-9]*.json
pids
*.pid
*.seed
*.pid.lock
lib-cov
coverage
*.lcov
.nyc_output
.grunt
bower_components
.lock-wscript
build/Release
jspm_packages/
web_modules/
*.tsbuildinfo
.npm
.eslintcache
.stylelintcache
.rpt2_cache/
.rts2_cache_cjs/
.rts2_cache_es/
.rts2_cache_umd/
.node_repl_history
*.tgz
.yarn-integrity
.env.development.local
.env.test.local
.env.production.local
.env.local
.next
out
.nuxt
.vuepress/dist
.temp
.docusaurus
.serverless/
.fusebox/
.dynamodb/
.tern-port
.vscode-test
.yarn/cache
.yarn/unplugged
.yarn/build-state.yml
.yarn/install-state.gz
.pnp.*
!.env.example
!keep.log
**/fixtures/**/*.snap
"""
NESTED_RULES = "generated/\n*.gen.py\n!important.gen.py\n/local.cfg\n"
EXCLUDE_RULES = "scratch/\n*.orig\n"
GLOBAL_RULES = ".DS_Store\n*.swp\n*~\n.idea/\n"
HOSTILE = "*a*a*a*a*a*a*a*a*a*a*a*a*c"


def build_tree(root: Path, files: int, seed: int = 7) -> int:
    """A monorepo-like tree of about ``files`` files; returns how many were made."""
    rng = random.Random(seed)
    (root / ".gitignore").write_text(ROOT_RULES)
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text(EXCLUDE_RULES)
    made = 0
    package = 0
    while made < files:
        pkg = root / "services" / f"svc{package // 20}" / f"pkg{package}"
        package += 1
        (pkg / "__pycache__").mkdir(parents=True)
        if package % 4 == 0:
            (pkg / ".gitignore").write_text(NESTED_RULES)
        for i in range(rng.randint(8, 30)):
            name = rng.choice(["mod", "util", "views", "models", "test_api", "schema", "gen"])
            suffix = rng.choice([".py", ".py", ".py", ".pyi", ".gen.py", ".md", ".json", ".log", ".swp", ".orig"])
            (pkg / f"{name}{i}{suffix}").write_text("")
            (pkg / "__pycache__" / f"{name}{i}.cpython-311.pyc").write_text("")
            made += 2
        if package % 10 == 0:
            (pkg / "generated").mkdir()
            (pkg / "generated" / "big.py").write_text("")
            (pkg / "fixtures" / "a" / "b").mkdir(parents=True)
            (pkg / "fixtures" / "a" / "b" / "x.snap").write_text("")
            (pkg / "fixtures" / "a" / "b" / "x.json").write_text("")
            made += 3
    web = root / "web"
    for i in range(200):
        (web / "src" / f"c{i // 20}").mkdir(parents=True, exist_ok=True)
        (web / "src" / f"c{i // 20}" / f"Comp{i}.tsx").write_text("")
        (web / "node_modules" / f"dep{i}").mkdir(parents=True)
        (web / "node_modules" / f"dep{i}" / "index.js").write_text("")
        made += 2
    (web / "dist").mkdir()
    (web / "dist" / "bundle.js").write_text("")
    return made + 1


def load_baseline(revision: str, into: Path) -> types.ModuleType:
    """``walk`` of ``revision``, with its ``gitignore``, as the private package ``_baseline``."""
    pkg = into / "_baseline"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("gitignore", "walk"):
        text = subprocess.run(
            ["git", "show", f"{revision}:{PACKAGE}/{name}.py"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout
        (pkg / f"{name}.py").write_text(text.replace("crab_tools_basic.gitignore", "_baseline.gitignore"))
    sys.path.insert(0, str(into))
    return importlib.import_module("_baseline.walk")


def cpu(run: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The median CPU seconds of ``repeat`` runs, and what the last returned."""
    times: list[float] = []
    result: object = None
    for _ in range(repeat):
        start = time.process_time()
        result = run()
        times.append(time.process_time() - start)
    return statistics.median(times), result


def hostile_seconds(compile_rules: Callable[[str], Callable[[str], object]], budget: float = 0.2) -> str:
    """How long one check of the hostile rule takes on a name of growing length.

    Lengths grow by two while a check stays under ``budget``; only a matcher that answers 26
    characters at once is tried on 200 (a backtracking one would not come back).
    """
    check = compile_rules(HOSTILE)
    spent = 0.0
    for n in (16, 18, 20, 22, 24, 26, 200):
        if n == 200 and spent > 0.001:
            break
        start = time.process_time()
        check("a" * n + "b")
        spent = time.process_time() - start
        if spent > budget:
            return f"{spent * 1000:.0f}ms at {n} chars (about 2x per added char)"
    return f"{spent * 1000:.2f}ms at {n} chars"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="main", help="the revision whose matcher to compare with")
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crab-bench-gitignore-") as folder:
        base = Path(folder)
        (base / "gitconfig").write_text("")
        (base / "xdg" / "git").mkdir(parents=True)
        (base / "xdg" / "git" / "ignore").write_text(GLOBAL_RULES)
        os.environ["GIT_CONFIG_GLOBAL"] = str(base / "gitconfig")
        os.environ["XDG_CONFIG_HOME"] = str(base / "xdg")
        tree = base / "tree"
        tree.mkdir()
        made = build_tree(tree, options.files)
        old = load_baseline(options.baseline, base)
        print(f"tree: {made} files, {sum(1 for _ in tree.rglob('.gitignore'))} .gitignore files; median CPU of "
              f"{options.repeat} runs; baseline {options.baseline}")  # fmt: skip
        print(f"{'case':<34} {'baseline':>10} {'pathspec':>10} {'ratio':>7}")

        def row(label: str, before: float, after: float, note: str = "") -> None:
            print(f"{label:<34} {before * 1000:>8.1f}ms {after * 1000:>8.1f}ms {after / before:>6.2f}x {note}")

        old_s, old_files = cpu(lambda: [e.relative for e in old.walk_files(tree, tree)], options.repeat)
        new_s, new_files = cpu(lambda: [e.relative for e in walk.walk_files(tree, tree)], options.repeat)
        assert isinstance(old_files, list)
        assert isinstance(new_files, list)
        row("walk (glob/grep listing)", old_s, new_s, f"{len(old_files)} vs {len(new_files)} files listed")
        (tree / ".git").rename(tree / ".git-off")
        old_s, old_files = cpu(lambda: [e.relative for e in old.walk_files(tree, tree)], options.repeat)
        new_s, new_files = cpu(lambda: [e.relative for e in walk.walk_files(tree, tree)], options.repeat)
        assert isinstance(old_files, list)
        assert old_files == new_files
        row("walk, no repository (same work)", old_s, new_s, f"{len(old_files)} files listed by both")
        (tree / ".git-off").rename(tree / ".git")
        big = tree / "services" / "svc0" / "pkg0"
        old_s, _ = cpu(lambda: old.list_folder(tree, big, old.parent_stack(tree, big)), options.repeat * 20)
        new_s, _ = cpu(lambda: walk.list_folder(tree, big, walk.parent_stack(tree, big)), options.repeat * 20)
        row("ls of one package folder", old_s, new_s)
        lines = ROOT_RULES.splitlines()
        old_gi = sys.modules["_baseline.gitignore"]
        old_s, _ = cpu(lambda: [old_gi.parse_line(line) for line in lines] * 1, options.repeat * 20)
        new_s, _ = cpu(lambda: gitignore.compile_rules(lines), options.repeat * 20)
        row(f"compile the root .gitignore ({len(lines)})", old_s, new_s)

        def old_rule(line: str) -> Callable[[str], object]:
            rule = old_gi.parse_line(line)
            return lambda name: rule.regex.match(name)

        def new_rule(line: str) -> Callable[[str], object]:
            spec = gitignore.compile_rules([line])
            assert spec is not None
            return lambda name: spec.check_file(name)

        def stock_rule(line: str) -> Callable[[str], object]:
            from pathspec import GitIgnoreSpec

            spec = GitIgnoreSpec.from_lines([line])
            return lambda name: spec.check_file(name)

        print(f"hostile rule {HOSTILE!r} on 'aaa…b':")
        print(f"  baseline {hostile_seconds(old_rule)}; crab on pathspec {hostile_seconds(new_rule)}; "
              f"pathspec alone {hostile_seconds(stock_rule)}")  # fmt: skip


if __name__ == "__main__":
    main()
