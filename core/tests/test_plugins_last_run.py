"""``crab plugins list`` calls no hook, yet never calls a plugin that the last run saw fail "loaded":
``crab run`` and ``crab doctor`` remember each plugin's failure (per version, redacted, bounded, in
``$CRAB_HOME``) and a later run in which the plugin works clears it (``crab._assembly.last_run``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crab._assembly.last_run import FILE_NAME, MAX_PLUGINS, MAX_REASON, applied, read, remember
from crab._host.plugin_host import PluginRecord

BROKEN = ["broken-table", "broken-startup", "broken-tools"]
LAST = "failed in the last run: "


def listed(crab_run: Any, env: dict[str, str]) -> dict[str, dict[str, Any]]:
    result = crab_run(["plugins", "list", "--json"], env)
    assert result.returncode == 0, result.stderr
    return {r["name"]: r for r in json.loads(result.stdout)}


def test_what_a_run_saw_fail_is_listed_failed_until_a_run_where_it_works(crab_run, fake_site, tmp_path: Path):
    env = fake_site([*BROKEN, "docs-provider", "good"])
    env["CRAB_PLUGINS"] = ",".join([*BROKEN, "docs-provider", "good"])
    before = listed(crab_run, env)
    assert {n: before[n]["status"] for n in BROKEN} == dict.fromkeys(BROKEN, "loaded")  # no hook was called yet
    ran = crab_run(["run", "hello"], env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    after = listed(crab_run, env)
    assert {n: (after[n]["status"], after[n]["reason"]) for n in BROKEN} == {
        "broken-table": ("failed", LAST + "crab_config_table raised RuntimeError: table boom"),
        "broken-startup": ("failed", LAST + "crab_startup raised ConnectionError: cannot reach the service"),
        "broken-tools": ("failed", LAST + "crab_tools raised ValueError: no tools today"),
    }
    assert after["docs-provider"]["status"] == after["good"]["status"] == "loaded"
    text = crab_run(["plugins", "list"], env).stdout.splitlines()
    assert text[text.index(next(t for t in text if t.startswith("broken-startup"))) + 1].strip() == (
        "↳ " + LAST + "crab_startup raised ConnectionError: cannot reach the service"
    )
    # The same plugins, loaded without the broken ones: nothing they did can clear or add a failure.
    env["CRAB_PLUGINS"] = "docs-provider,good"
    assert crab_run(["run", "hello"], env, cwd=tmp_path).returncode == 0
    env["CRAB_PLUGINS"] = ",".join([*BROKEN, "docs-provider", "good"])
    assert {n: listed(crab_run, env)[n]["status"] for n in BROKEN} == dict.fromkeys(BROKEN, "failed")


def test_a_lost_tool_is_remembered_and_cleared_when_the_clash_is_gone(crab_run, fake_site, tmp_path: Path):
    env = fake_site(["duplicate", "good", "docs-provider"])
    env["CRAB_PLUGINS"] = "docs-provider,duplicate,good"  # both register `echo`: duplicate comes first
    assert crab_run(["run", "hello"], env, cwd=tmp_path).returncode == 0
    good = listed(crab_run, env)["good"]
    assert good["status"] == "failed" and good["reason"].startswith(LAST + "its tool 'echo' was left out")
    env["CRAB_PLUGINS"] = "docs-provider,good"
    assert crab_run(["run", "hello"], env, cwd=tmp_path).returncode == 0  # good works again
    assert listed(crab_run, env)["good"]["status"] == "loaded"
    assert "good" not in read(Path(env["CRAB_HOME"]) / FILE_NAME)


def test_doctor_remembers_too_and_secrets_are_masked(crab_run, fake_site, tmp_path: Path):
    env = fake_site(["broken-startup", "docs-provider"])
    env.update(CRAB_PLUGINS="broken-startup,docs-provider", FAKE_SERVICE_TOKEN="reach the service")
    doctor = crab_run(["doctor"], env, cwd=tmp_path)
    assert "FAIL  plugin broken-startup failed: crab_startup raised ConnectionError" in doctor.stdout
    stored = (Path(env["CRAB_HOME"]) / FILE_NAME).read_text()
    assert "broken-startup" in stored and "reach the service" not in stored
    record = listed(crab_run, env)["broken-startup"]
    assert record["status"] == "failed" and "reach the service" not in record["reason"]


def _record(name: str, version: str = "1.0", **fields: Any) -> PluginRecord:
    return PluginRecord(
        name=name, status=fields.pop("status", "loaded"), distribution=f"crab-{name}", version=version, **fields
    )


def test_the_file_is_bounded_one_line_per_plugin_and_tied_to_the_version(tmp_path: Path):
    path = tmp_path / FILE_NAME
    many = {f"p{i}": _record(f"p{i}", status="failed", reason="boom\n" + "x" * 1000) for i in range(MAX_PLUGINS + 20)}
    remember(path, many, complete=True, redact=str)
    kept = read(path)
    assert len(kept) == MAX_PLUGINS and "p0" not in kept and f"p{MAX_PLUGINS + 19}" in kept  # the newest stay
    assert all(len(entry.reason) <= MAX_REASON and "\n" not in entry.reason for entry in kept.values())
    newer = _record("p30", version="1.1")
    assert applied(newer, kept) is newer  # an upgrade may have fixed it: not shown as failed
    assert applied(_record("p30"), kept).status == "failed"
    remember(path, {"p30": _record("p30")}, complete=False, redact=str)
    assert "p30" in read(path)  # a run that did not call every hook clears nothing
    remember(path, {"p30": _record("p30")}, complete=True, redact=str)
    assert "p30" not in read(path)


def test_a_file_crab_did_not_write_is_ignored(tmp_path: Path):
    path = tmp_path / FILE_NAME
    for text in ("not json", "[1, 2]", '{"p": {"version": 1}}', '{"p": "x"}'):
        path.write_text(text)
        assert read(path) == {}
    assert read(tmp_path / "absent.json") == {}
