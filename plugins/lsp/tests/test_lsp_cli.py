"""End to end through the real ``crab run`` (a subprocess) with ``ruff server``: an edit's
diagnostics join its result; a server in an untrusted project's config never starts; a malformed
server table is one line and exit 2 before anything runs.

The site holds two test plugins: ``scripted`` (the scripted provider, replies from a JSON file)
and ``fakewrite`` (a ``write`` tool, as crab-tools-basic's is named, that writes the file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPTED = """
import json, os
import crab
from crab.testing import ScriptedProvider


class Scripted:
    name = "scripted"

    def __init__(self):
        with open(os.environ["LSP_TEST_SCRIPT"], encoding="utf-8") as handle:
            self.engine = ScriptedProvider(json.load(handle))

    def models(self):
        return [crab.ModelInfo(id="scripted", provider="scripted")]

    def check(self, model):
        return None

    def stream(self, request):
        return self.engine.stream(request)


@crab.hookimpl
def crab_providers(config):
    return [Scripted()]
"""

FAKEWRITE = '''
from pathlib import Path

import crab


@crab.tool(name="write", permission="read")
def write(path: str, content: str) -> str:
    """Write a file."""
    Path(path).write_text(content, encoding="utf-8")
    return f"wrote {path}"


@crab.hookimpl
def crab_tools(config):
    return [write]
'''

SCRIPT = [[{"tool": "write", "args": {"path": "a.py", "content": "import os\n"}}], [{"text": "written"}]]


@pytest.fixture
def crab_run(tmp_path: Path, own_home: Path):
    site = tmp_path / "site"
    for name, module, text in (("scripted", "lsp_test_scripted", SCRIPTED), ("fakewrite", "lsp_test_write", FAKEWRITE)):
        dist = site / f"{module}-0.0.1.dist-info"
        dist.mkdir(parents=True)
        (site / f"{module}.py").write_text(text, encoding="utf-8")
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.0.1\n")
        (dist / "entry_points.txt").write_text(f"[crab]\n{name} = {module}\n")

    def run(cwd: Path) -> subprocess.CompletedProcess[str]:
        script = tmp_path / "script.json"
        script.write_text(json.dumps(SCRIPT), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
        env.update(
            PYTHONPATH=str(site),
            HOME=str(own_home),
            CRAB_HOME=str(own_home / ".crab"),
            CRAB_PLUGINS="lsp,scripted,fakewrite",
            LSP_TEST_SCRIPT=str(script),
        )
        return subprocess.run(
            [sys.executable, "-m", "crab", "run", "-o", "jsonl", "write it"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


def _table(ruff: list[str]) -> str:
    return (
        f"[plugins.lsp.servers.ruff]\ncommand = {json.dumps(ruff[0])}\nargs = {json.dumps(ruff[1:])}\n"
        'patterns = ["*.py"]\n'
    )


def _results(stdout: str) -> list[dict[str, object]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [e for e in events if e.get("type") == "tool_result"]


def test_a_writes_diagnostics_come_back_through_crab_run(crab_run, ruff, own_home, tmp_path):
    (own_home / ".crab" / "config.toml").write_text(_table(ruff) + "[plugins.lsp]\ndiagnostics_wait = 60\n")
    work = tmp_path / "work"
    work.mkdir()
    done = crab_run(work)
    assert done.returncode == 0, done.stderr
    [result] = _results(done.stdout)
    assert result["content"] == (
        "wrote a.py\n\nruff diagnostics for a.py (1 warning):\n"
        "a.py:1:8: warning: `os` imported but unused help: Remove unused import: `os` [Ruff F401]"
    )


def test_an_untrusted_projects_server_never_starts(crab_run, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    marker = tmp_path / "started"
    (project / ".crab").mkdir()
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('x')"]
    (project / ".crab" / "config.toml").write_text(_table(command))
    done = crab_run(project)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    [result] = _results(done.stdout)
    assert result["content"] == "wrote a.py"
    assert "plugins.lsp.servers" in done.stdout + done.stderr and f"crab trust {project}" in done.stdout + done.stderr


def test_a_malformed_server_table_is_one_line_and_exit_2(crab_run, own_home, tmp_path):
    (own_home / ".crab" / "config.toml").write_text('[plugins.lsp.servers.ruff]\ncommand = "ruff"\n')
    done = crab_run(tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "plugins.lsp.servers.ruff.patterns: expected a non-empty list of globs" in line


def test_doctor_names_each_server_and_whether_it_is_installed(ruff, own_home, tmp_path):
    (own_home / ".crab" / "config.toml").write_text(
        _table(ruff) + '[plugins.lsp.servers.ghost]\ncommand = "no-such-language-server"\npatterns = ["*.go"]\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(HOME=str(own_home), CRAB_HOME=str(own_home / ".crab"), CRAB_PLUGINS="lsp")
    done = subprocess.run(
        [sys.executable, "-m", "crab", "doctor"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stdout + done.stderr  # a fail line makes doctor exit 1
    assert f"language server ruff: {ruff[0]} (for *.py)" in done.stdout
    assert "language server ghost: 'no-such-language-server' is not on PATH" in done.stdout
