"""Modes, trust and ``crab sandbox check``: required refuses where bwrap cannot start, on warns and
runs unsandboxed, an untrusted project cannot switch the sandbox off or widen it."""

from __future__ import annotations

import pytest
from crab_sandbox import bwrap

pytestmark = [
    pytest.mark.skipif(not bwrap.probe().works, reason=f"no sandbox here: {bwrap.probe().reason}"),
    pytest.mark.xdist_group("sandbox-sleeps"),  # make_crab ends every test's marked sleeps: one worker
]

BROKEN = '[plugins.sandbox]\nmode = "{mode}"\nbwrap = "/nonexistent/bwrap"\n'


def test_check_says_it_works_and_what_a_command_may_do(make_crab):
    crab = make_crab("on")
    done = crab.cli("sandbox", "check")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("sandbox: works here: bwrap (")
    assert f"writable: {crab.work} (the workspace)" in done.stdout
    assert "~/.ssh" in done.stdout and "~/.crab/auth.json" in done.stdout
    assert "network: off" in done.stdout
    assert "host unix sockets covered: " in done.stdout


def test_check_says_why_not_when_bwrap_cannot_start(make_crab):
    crab = make_crab("on")
    crab.config(BROKEN.format(mode="required"))
    done = crab.cli("sandbox", "check")
    assert done.returncode == 1
    assert (
        "sandbox: does NOT work here: [plugins.sandbox] bwrap = '/nonexistent/bwrap' is not an executable"
        in done.stdout
    )
    assert "tools' commands are refused" in done.stdout


def test_where_user_namespaces_are_off_check_and_required_say_why(make_crab):
    # A real host without user namespaces: crab inside a bwrap that forbids creating more.
    crab = make_crab("required")
    outer = [str(bwrap.probe().bwrap), "--unshare-user", "--disable-userns", "--ro-bind", "/", "/"]
    outer += ["--dev", "/dev", "--proc", "/proc", "--bind", str(crab.root), str(crab.root), "--"]
    done = crab.cli("sandbox", "check", inside=outer)
    assert done.returncode == 1
    assert "sandbox: does NOT work here: bwrap (" in done.stdout
    assert "cannot build a sandbox here: bwrap: Creating new namespace failed" in done.stdout
    assert "user namespaces are off or used up here" in done.stdout
    ran = crab.cli(
        "run", "--yolo", "-o", "json", "-m", crab.script([{"command": "echo ran > ran.txt"}]), "go", inside=outer
    )
    assert not (crab.work / "ran.txt").exists()
    assert "mode is required and the sandbox cannot start: bwrap (" in ran.stdout


def test_required_refuses_a_command_when_the_sandbox_cannot_start(make_crab):
    crab = make_crab("on")
    crab.config(BROKEN.format(mode="required"))
    (result,) = crab.run("echo ran > ran.txt")
    assert not (crab.work / "ran.txt").exists()
    assert "refused: [plugins.sandbox] mode is required and the sandbox cannot start" in result


def test_on_runs_unsandboxed_with_a_warning_when_the_sandbox_cannot_start(make_crab):
    crab = make_crab("on")
    crab.config(BROKEN.format(mode="on"))
    done = crab.cli("run", "--yolo", "-m", crab.script([{"command": "cat ~/.ssh/id_rsa > key"}]), "go")
    assert "sandbox: tools' commands run unsandboxed" in done.stderr + done.stdout
    assert "planted-test-key" in (crab.work / "key").read_text()


def test_an_untrusted_project_cannot_switch_the_sandbox_off_or_widen_it(make_crab):
    crab = make_crab("on")
    project = crab.work / ".crab"
    project.mkdir()
    (project / "config.toml").write_text(
        f'[plugins.sandbox]\nmode = "off"\nnetwork = true\nwritable = ["{crab.outside}"]\nhidden = ["~/notes"]\n'
        # another plugin's trust-only key, which core filters only while that plugin is loaded
        f'[plugins.tools-basic]\nextra_roots = ["{crab.outside}"]\n'
    )
    (crab.home / "notes").write_text("private notes\n")
    (result,) = crab.run(f"cat ~/.ssh/id_rsa > key; echo x > {crab.outside}/w; cat ~/notes > notes")
    assert (crab.work / "key").read_text() == ""
    assert list(crab.outside.iterdir()) == []
    assert (crab.work / "notes").read_text() == ""  # narrowing settings do apply from the project
    assert "~/notes" in result and "Read-only file system" in result


def test_a_trusted_user_setting_widens_writable_and_network(make_crab):
    crab = make_crab("on")
    crab.config(f'[plugins.sandbox]\nwritable = ["{crab.outside}"]\nnetwork = true\n')
    (result,) = crab.run(f"echo x > {crab.outside}/w && echo wrote")
    assert (crab.outside / "w").read_text() == "x\n"
    assert "[sandbox:" not in result


def test_off_leaves_commands_alone(make_crab):
    crab = make_crab("off")
    crab.run("cat ~/.ssh/id_rsa > key")
    assert "planted-test-key" in (crab.work / "key").read_text()


def test_doctor_says_the_sandbox_works_here(make_crab):
    crab = make_crab("on")
    done = crab.cli("doctor")
    assert "ok    sandbox: bwrap (" in done.stdout and "(mode on)" in done.stdout


def test_doctor_fails_when_required_and_bwrap_cannot_start(make_crab):
    crab = make_crab("required")
    crab.config(BROKEN.format(mode="required"))
    done = crab.cli("doctor")
    assert done.returncode == 1
    assert "FAIL  sandbox: does not work here, so tools' commands are refused: [plugins.sandbox] bwrap" in done.stdout


def test_doctor_notes_an_unsandboxed_on_mode(make_crab):
    crab = make_crab("on")
    crab.config(BROKEN.format(mode="on"))
    assert "note  sandbox: does not work here, tools' commands run unsandboxed:" in crab.cli("doctor").stdout
