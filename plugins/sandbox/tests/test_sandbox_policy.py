"""The bwrap command line a command gets, and the note its result gets, as plain functions."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from crab_sandbox import policy, report
from crab_sandbox.settings import load_settings


def _build(tmp_path: Path, *, network: bool = False, env: dict[str, str] | None = None, **table):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    settings = load_settings(table, work)
    return policy.build(
        "bwrap",
        ["bash", "-c", "true"],
        workspace=work,
        cwd=work,
        settings=settings,
        env=env or {},
        secrets=["sk-known-secret-value"],
        network=network,
        unreadable=Path("/dev/null"),
    )


def test_the_command_runs_last_after_every_mount_in_order(tmp_path: Path):
    args, facts = _build(tmp_path)
    assert args[-4:] == ["--", "bash", "-c", "true"]
    joined = " ".join(args)
    # the private /tmp first, then the host folder of a workspace under /tmp read-only, then the workspace
    work = str((tmp_path / "work").resolve())
    assert joined.index("--tmpfs /tmp") < joined.index(f"--bind {work} {work}")
    assert "--unshare-net" in args and "--die-with-parent" in args and "--unshare-pid" in args
    assert facts.writable == (Path(work),) and facts.network is False


def test_network_permission_keeps_the_network(tmp_path: Path):
    args, facts = _build(tmp_path, network=True)
    assert "--unshare-net" not in args and facts.network


def test_secret_variables_are_unset_by_name_and_by_value(tmp_path: Path):
    env = {
        "OPENAI_API_KEY": "a",
        "GH_TOKEN": "b",
        "DATABASE_DSN": "c",
        "CUSTOM": "sk-known-secret-value",
        "PATH": "/bin",
    }
    args, facts = _build(tmp_path, env=env, hidden_env=["PATH"])
    assert facts.unset == ("CUSTOM", "DATABASE_DSN", "GH_TOKEN", "OPENAI_API_KEY", "PATH")
    # taken out before bwrap starts (bwrap is pid 1 inside: its own environment shows there)
    assert Path(args[0]).name == "env" and args[1:12] == [
        "-u",
        "CUSTOM",
        "-u",
        "DATABASE_DSN",
        "-u",
        "GH_TOKEN",
        "-u",
        "OPENAI_API_KEY",
        "-u",
        "PATH",
        "--",
    ]
    assert args[12] == "bwrap" and "--unsetenv" not in args
    plain, _ = _build(tmp_path, env={"PATH": "/bin"})
    assert plain[0] == "bwrap"  # nothing to take out: bwrap itself


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder outside /tmp (the sandbox's /tmp is its own), as a host daemon's socket would be."""
    base = Path("/var/tmp")
    if not os.access(base, os.W_OK):
        pytest.skip("/var/tmp is not writable here")
    folder = Path(tempfile.mkdtemp(prefix="crab-sandbox-", dir=base))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_host_sockets_are_covered_except_the_workspaces_and_those_let_through(tmp_path: Path, outside_tmp: Path):
    work = (tmp_path / "work").resolve()
    (work / "secret").mkdir(parents=True)
    daemon, allowed = outside_tmp / "daemon.sock", outside_tmp / "allowed.sock"
    own, hidden, in_tmp = work / "own.sock", work / "secret" / "h.sock", tmp_path.resolve() / "beside.sock"
    for path in (daemon, allowed, own, hidden, in_tmp):
        # socket files no process listens on: no crab running beside this test lists them (a bound
        # one in /var/tmp it would cover, and its removal could meet that crab's bwrap start)
        os.mknod(path, stat.S_IFSOCK | 0o600)
    args, facts = policy.build(
        "bwrap",
        ["true"],
        workspace=work,
        cwd=work,
        settings=load_settings({"unix_sockets": [str(allowed)], "hidden": [str(work / "secret")]}, work),
        env={},
        secrets=[],
        network=False,
        unreadable=Path("/dev/null"),
        # one gone since it was listed gets no mount (bwrap would fail on it), one listed twice one
        sockets=[str(p) for p in (daemon, allowed, own, hidden, in_tmp, outside_tmp / "gone.sock", daemon)],
    )
    joined = " ".join(args)
    assert facts.sockets == (daemon,)
    assert joined.count(f"--ro-bind /dev/null {daemon}") == 1
    assert not any(f"/dev/null {path}" in joined for path in (allowed, own, hidden, in_tmp, outside_tmp / "gone.sock"))
    assert joined.index(f"--ro-bind /dev/null {daemon}") > joined.index(f"--bind {work} {work}")


def test_host_sockets_lists_the_bound_ones_and_those_under_run(tmp_path: Path):
    import socket

    from crab_sandbox import sockets

    bound = socket.socket(socket.AF_UNIX)
    bound.bind(str(tmp_path / "bound.sock"))
    run = tmp_path / "run" / "deep" / "er"
    run.mkdir(parents=True)
    left = socket.socket(socket.AF_UNIX)
    left.bind(str(run / "left.sock"))  # a file only: its listing says so only in the namespace that bound it
    (tmp_path / "run" / "plain").write_text("not a socket")
    try:
        listed = sockets.host_sockets(folders=())
        walked = sockets.host_sockets(table=tmp_path / "missing", folders=(tmp_path / "run",))
        assert sockets.is_socket(run / "left.sock") and not sockets.is_socket(tmp_path / "run" / "plain")
    finally:
        bound.close()
        left.close()
    assert str(tmp_path / "bound.sock") in listed
    assert walked == [str(run / "left.sock")]


def test_hidden_paths_that_exist_are_covered_after_the_workspace(tmp_path: Path):
    secret = tmp_path / "work" / "secret"
    secret.mkdir(parents=True)
    args, facts = _build(tmp_path, hidden=[str(secret), str(tmp_path / "missing")])
    joined = " ".join(args)
    assert f"--perms 0000 --tmpfs {secret.resolve()}" in joined
    assert joined.index(f"--tmpfs {secret.resolve()}") > joined.index("--bind ")
    assert secret in facts.hidden and tmp_path / "missing" not in facts.hidden


def test_the_note_names_what_was_refused():
    home = Path("/home/u")
    facts = policy.Facts((Path("/w"),), (home / ".ssh",), ("DEMO_API_KEY",), network=False)
    line = report.note(
        facts, "cat ~/.ssh/id_rsa; echo $DEMO_API_KEY; curl x", "curl: (6) Could not resolve host: x", home
    )
    assert line is not None and line.startswith("[sandbox: ~/.ssh is hidden")
    assert "the network is off" in line and "$DEMO_API_KEY not passed" in line
    assert report.note(facts, "echo hi", "hi", home) is None
    assert "writing outside the workspace is refused (writable: /w" in str(
        report.note(facts, "echo x > /etc/x", "bash: /etc/x: Read-only file system", home)
    )


def test_a_user_without_a_home_folder_gets_the_policy_and_its_notes(tmp_path: Path, monkeypatch):
    """No ``$HOME`` and no passwd entry (a container's arbitrary uid): Path.home() raises."""

    import os.path

    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # what it does with no home to find
    with pytest.raises(RuntimeError):
        Path.home()
    monkeypatch.setenv("CRAB_HOME", str(tmp_path / "crab-home"))
    work = tmp_path / "work"
    work.mkdir()
    settings = load_settings({"hidden": ["~/.secret", str(tmp_path / "kept")], "writable": ["out"]}, work)
    assert tmp_path / "kept" in settings.hidden  # a path that needs no home still counts
    assert all(".secret" not in str(p) for p in settings.hidden)  # no home: nothing there to hide
    assert tmp_path / "crab-home" / "auth.json" in settings.hidden
    assert settings.writable == (work / "out",)
    facts = policy.Facts((work,), (tmp_path / "kept",), (), network=False)
    assert "is hidden" in str(report.note(facts, f"cat {tmp_path / 'kept'}", "No such file"))
