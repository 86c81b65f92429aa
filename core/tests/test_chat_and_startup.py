"""``crab chat`` over a pipe, and what the fast commands may import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("httpx", "rich", "mcp", "pydantic")


def test_chat_reads_lines_runs_commands_and_turns(crab_run, fake_site, tmp_path: Path):
    env = fake_site(["scripted"])
    env["CRAB_PLUGINS"] = "scripted"
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"replies": [[{"text": "first answer"}], [{"text": "second answer"}]]}))
    lines = "/help\nhello\n/nosuch\nagain\n/quit\nnever sent\n"
    result = crab_run(["chat", "-m", f"scripted/{path}"], env, cwd=tmp_path, stdin=lines)
    assert result.returncode == 0, result.stderr
    assert "/handoff NAME [summary]" in result.stdout
    assert "first answer\n" in result.stdout
    assert "second answer\n" in result.stdout
    assert "unknown command /nosuch" in result.stderr
    assert "never sent" not in result.stdout + result.stderr


def imported_modules(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "crab", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["plugins", "list"]])
def test_fast_commands_import_nothing_heavy(args, crab_home):
    modules = imported_modules(args)
    assert modules, "importtime printed nothing"
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == []


def test_version_imports_almost_nothing(crab_home):
    modules = imported_modules(["--version"])
    assert not any(m.split(".")[0] in ("typer", "pluggy") for m in modules)
    # crab's entry-point reader answered itself (crab/_host/entry_points.py), not its fallback
    assert "importlib.metadata" not in modules


def test_help_does_not_load_the_event_loop_machinery(crab_home):
    # asyncio alone is ~40 modules; --help only registers commands, so neither core nor an
    # installed plugin's top-level module may import it (bench/startup.py measures the rest).
    assert "asyncio" not in imported_modules(["--help"])


MODULES_AFTER = """
import sys
before = set(sys.modules)  # what a bare interpreter has already loaded
sys.argv = ["crab", *sys.argv[1:]]
from crab._cli import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\nBEFORE " + " ".join(sorted(before)) + "\\nAFTER " + " ".join(sorted(sys.modules)) + "\\n")
"""


def modules_after(args: list[str]) -> tuple[set[str], set[str]]:
    """(modules a bare interpreter had, modules loaded once ``crab ARGS`` has run), from sys.modules.

    ``-X importtime`` does not list packages imported through an editable install's finder (every
    plugin's top-level package here), so this reads ``sys.modules`` in the child instead; the
    child imports nothing of its own (not even json) so the count is crab's alone.
    """
    result = subprocess.run([sys.executable, "-c", MODULES_AFTER, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    before = result.stderr.rsplit("\nBEFORE ", 1)[1].split("\nAFTER ")[0]
    after = result.stderr.rsplit("\nAFTER ", 1)[1]
    return set(before.split()), set(after.split())


def plugin_packages() -> set[str]:
    from crab._host.entry_points import entry_points

    return {ep.value.split(":")[0].split(".")[0] for ep in entry_points("crab")}


def test_help_imports_no_plugin_implementation_module(crab_home):
    # A plugin's top-level module holds thin hooks; its implementation is imported when used.
    packages = plugin_packages()
    assert {"crab_tape_jsonl", "crab_store_sqlite"} <= packages, "run with the first-party plugins installed"
    _, after = modules_after(["--help"])
    assert packages <= after, "every enabled plugin's top-level module is loaded (crab_cli may add commands)"
    implementation = sorted(m for m in after if "." in m and m.split(".")[0] in packages)
    assert implementation == []


def test_plugins_list_imports_only_top_level_plugin_modules_and_not_typer(crab_home):
    # It shows what loading finds (bench/startup.py prints its cost beside --help's): each
    # enabled plugin's top-level module is imported, no hook is called, and typer, which alone
    # costs more than the listing, is never loaded (crab._cli.main answers before the app).
    packages = plugin_packages()
    _, after = modules_after(["plugins", "list"])
    assert packages <= after
    assert sorted(m for m in after if "." in m and m.split(".")[0] in packages) == []
    assert "typer" not in after and "crab._cli.app" not in after
    assert "importlib.metadata" not in after  # entry points read by crab's reader, not its fallback


def test_help_imports_at_most_150_modules_plus_one_per_plugin(crab_home):
    # typer alone accounts for about 105; bench/startup.py prints the figures side by side.
    # Each enabled plugin adds its top-level module (and nothing else: the test above), so the
    # budget is 150 for crab and its dependencies plus one per plugin. Since core is split into
    # subpackages, four of those are empty package ``__init__`` modules (crab._host, ._config,
    # ._contracts, ._cli), one the API 1.x shim finder (crab._compat) and one the hookspecs that
    # plugins declare (crab._host.declared: crab-schedule and crab-skills declare one each).
    packages = plugin_packages()
    assert len(packages) >= 6, "run with every first-party plugin installed"
    before, after = modules_after(["--help"])
    added = sorted(after - before - packages)
    assert len(added) <= 150, added
    # The same budget as `python -X importtime -m crab --help` counts (issue 39 read 177 off it):
    # its distinct names (runpy and failed platform probes such as nt included), less what
    # `python -X importtime -c pass` lists (the interpreter's own start-up, 26 modules, which
    # the raw line count includes) and the plugins' top-level modules (which it lists only for
    # packages not installed in editable mode).
    listed = imported_modules(["--help"]) - imported_modules_by_python(["-c", "pass"]) - packages
    assert len(listed) <= 150, sorted(listed)


def imported_modules_by_python(args: list[str]) -> set[str]:
    """The distinct names ``python -X importtime ARGS`` lists (the header line left out)."""
    result = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    return {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:") and "|" in line} - {
        "imported package"
    }


def test_help_lists_crab_sessions_without_importing_its_commands(crab_home):
    # `crab --help` needs the group's line only; its module (typer options for seven commands)
    # is imported when the command line names `sessions`.
    _, after = modules_after(["--help"])
    assert "crab._cli.sessions" not in after
    _, after = modules_after(["sessions", "--help"])
    assert "crab._cli.sessions" in after


def test_sessions_works_after_a_help_in_the_same_process(crab_cli):
    # crab.testing.run_cli runs in-process: the help-only group must give way to the real one.
    assert "sessions" in crab_cli("--help").stdout
    listed = crab_cli("sessions", "list", "--store", "memory")
    assert listed.exit_code == 0, listed.stderr
    assert "sessions" in crab_cli("--help").stdout


def test_no_command_s_one_line_help_is_cut_mid_sentence():
    # click cuts a command's line in `--help` at the first ". ": "e.g. crab.model" became "e.g.".
    import typer
    from crab._cli.app import app

    def walk(command: typer.core.TyperCommand, path: str) -> list[tuple[str, str]]:
        found = [(path, command.get_short_help_str(limit=200))]
        for name, sub in getattr(command, "commands", {}).items():
            found += walk(sub, f"{path} {name}")
        return found

    lines = walk(typer.main.get_command(app), "crab")
    cut = [(path, text) for path, text in lines if text.endswith(("e.g.", "i.e.", "etc."))]
    assert cut == [], cut
