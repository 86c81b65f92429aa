"""Attaching images from the command line: ``crab run --attach FILE`` (repeatable) in a real
subprocess, and ``@pic.png`` tokens in a ``crab chat`` line (plain prompt, real subprocess)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from crab._cli.attach import find_attachments
from crab.testing import make_png

PNG = make_png(2, 2)
GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"


@pytest.fixture
def env(fake_site, tmp_path: Path) -> dict[str, str]:
    env = fake_site(["scripted"])
    env["CRAB_PLUGINS"] = "scripted"
    env["CRAB_FAKE_REQUEST_LOG"] = str(tmp_path / "requests.jsonl")
    return env


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "pic.png").write_bytes(PNG)
    (work / "anim.gif").write_bytes(GIF)
    (work / "notes.txt").write_text("not an image")
    return work


def script(tmp_path: Path, replies: list) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"replies": replies}))
    return str(path)


def requests(tmp_path: Path) -> list[list]:
    return [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]


def test_run_attach_sends_every_image_with_the_prompt(crab_run, env, workspace, tmp_path):
    model = "scripted/" + script(tmp_path, [[{"text": "two pictures"}]])
    result = crab_run(
        ["run", "-m", model, "--attach", "pic.png", "-a", "anim.gif", "what are these?"], env, cwd=workspace
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "two pictures\n"
    assert "attached pic.png (image/png" in result.stderr and "anim.gif (image/gif" in result.stderr
    assert requests(tmp_path) == [[["user", "image/png", len(PNG), True], ["user", "image/gif", len(GIF), True]]]


@pytest.mark.parametrize(
    ("name", "message"),
    [("notes.txt", "cannot attach notes.txt: it is not a PNG, JPEG, GIF or WebP image"), ("gone.png", "no such file")],
)
def test_run_attach_of_a_bad_file_is_one_line_and_exit_2(crab_run, env, workspace, tmp_path, name, message):
    model = "scripted/" + script(tmp_path, [[{"text": "never"}]])
    result = crab_run(["run", "-m", model, "--attach", name, "look"], env, cwd=workspace)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_run_attach_over_the_cap_is_one_line_and_exit_2(crab_run, env, workspace, tmp_path):
    (workspace / "big.png").write_bytes(make_png(64, 64, noise=True))
    model = "scripted/" + script(tmp_path, [[{"text": "never"}]])
    args = ["run", "-m", model, "--set", "crab.max_image_bytes=4096", "--set", "crab.max_image_side=64"]
    result = crab_run([*args, "--attach", "big.png", "look"], env, cwd=workspace)
    assert result.returncode == 2, result.stderr
    assert "over the cap of 4.0 KB" in result.stderr and "Traceback" not in result.stderr


def test_chat_at_token_attaches_and_says_so(crab_run, env, workspace, tmp_path):
    model = "scripted/" + script(tmp_path, [[{"text": "a picture"}], [{"text": "plain"}]])
    lines = "describe @pic.png please\nwrite to me@example.com\n"
    result = crab_run(["chat", "-m", model], env, cwd=workspace, stdin=lines)
    assert result.returncode == 0, result.stderr
    assert "attached pic.png (image/png" in result.stdout + result.stderr
    assert requests(tmp_path) == [
        [["user", "image/png", len(PNG), True]],
        [["user", "image/png", len(PNG), True]],  # the history still holds it; the e-mail attaches nothing
    ]


def test_chat_at_token_naming_a_missing_image_sends_nothing(crab_run, env, workspace, tmp_path):
    model = "scripted/" + script(tmp_path, [[{"text": "the next one"}]])
    result = crab_run(["chat", "-m", model], env, cwd=workspace, stdin="look at @missing.png\nhello\n")
    assert result.returncode == 0, result.stderr
    assert "cannot attach missing.png: no such file (nothing was sent)" in result.stdout + result.stderr
    assert requests(tmp_path) == [[]]  # only "hello" reached the model


def test_find_attachments_reads_quoted_paths_and_skips_mentions(tmp_path: Path) -> None:
    (tmp_path / "my pic.png").write_bytes(PNG)
    (tmp_path / "pic.png").write_bytes(PNG)
    found = find_attachments('see @"my pic.png" and @pic.png, ask @alice', tmp_path)
    assert found.error is None and len(found.images) == 2
    assert found.labels[0].startswith("my pic.png (image/png")
    assert find_attachments("@pic.png @pic.png", tmp_path).images[1:] == []  # once per file


def test_a_server_uri_reference_is_left_to_plugins_even_when_it_names_an_image(tmp_path: Path) -> None:
    # crab-mcp's @server:uri: not a file, so neither attached nor an error here.
    found = find_attachments("compare @tiny:tiny://pixel.png and @files:file:///tmp/x.jpg", tmp_path)
    assert found.error is None and found.images == []
    assert find_attachments("@notes:draft.png", tmp_path).error is not None  # no scheme: a file name


def test_a_fifo_named_like_an_image_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A cloned repository's ``logo.png`` may be a FIFO: opening it for reading would block crab for ever."""
    import os
    import threading

    os.mkfifo(tmp_path / "logo.png")
    found: list[object] = []
    reader = threading.Thread(target=lambda: found.append(find_attachments("look at @logo.png", tmp_path)), daemon=True)
    reader.start()
    reader.join(timeout=20)
    if reader.is_alive():  # let the blocked open go, so the test process can end
        with open(tmp_path / "logo.png", "wb"):
            pass
        raise AssertionError("attaching a FIFO blocked")
    [attached] = found
    assert attached.error == "cannot attach logo.png: it is not a regular file"  # type: ignore[attr-defined]
