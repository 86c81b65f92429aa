"""A plugin's ``crab_doctor`` lines appear in ``crab doctor``; a ``fail`` makes it exit 1, and a
malformed answer is one FAIL line naming the plugin (crab._cli.doctor)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def doctor(fake_site: Any, crab_run: Any, tmp_path: Path):
    env = fake_site(["docs-provider"])  # a provider that works with its defaults: doctor passes without ours
    site = Path(env["PYTHONPATH"])
    dist = site / "crab_fake_doctorish-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crab-fake-doctorish\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[crab]\ndoctorish = crab_fake_doctorish\n")
    env["CRAB_PLUGINS"] = "docs-provider,doctorish"

    def run(body: str, **more_env: str) -> Any:
        source = "import crab\n\n\n@crab.hookimpl\ndef crab_doctor(config):\n" + textwrap.indent(body, "    ")
        (site / "crab_fake_doctorish.py").write_text(source)
        return crab_run(["doctor"], {**env, **more_env}, cwd=tmp_path)

    return run


def test_a_plugins_lines_are_shown(doctor):
    done = doctor('return [("ok", "widget: ready"), ("note", "widget: slow  here")]\n')
    assert "ok    widget: ready\n" in done.stdout
    assert "note  widget: slow here\n" in done.stdout  # one line, whitespace folded
    assert done.returncode == 0, done.stdout


def test_a_fail_line_fails_doctor(doctor):
    done = doctor('return [("fail", "widget: no key; set WIDGET_KEY")]\n')
    assert "FAIL  widget: no key; set WIDGET_KEY\n" in done.stdout
    assert done.returncode == 1


def test_a_malformed_answer_is_one_line_naming_the_plugin(doctor):
    done = doctor('return ["just text"]\n')
    assert "FAIL  plugin doctorish: crab_doctor gave 'just text', expected" in done.stdout
    assert "Traceback" not in done.stderr and done.returncode == 1


def test_a_raising_implementation_is_a_failure_line_not_a_traceback(doctor):
    done = doctor('raise RuntimeError("probe exploded")\n')
    assert "plugin doctorish failed: crab_doctor raised RuntimeError: probe exploded" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_a_plugins_line_is_masked_and_cannot_drive_the_terminal(doctor):
    body = 'return [("note", "widget: key sk-widget-0123456789abcdef \\x1b]0;owned\\x07\\x1b[2J ok")]\n'
    done = doctor(body, WIDGET_API_KEY="sk-widget-0123456789abcdef")
    assert "sk-widget-0123456789abcdef" not in done.stdout
    assert "\x1b" not in done.stdout and "^[]0;owned^G^[[2J ok" in done.stdout
