"""``crab run --output-schema FILE`` end to end in a subprocess: stdout is the answer's JSON value
(validated, sent back once with the reason when it does not match), ``-o json`` adds it as
``output``; a bad schema file is one line and exit 2, an answer that never matches exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
}


@pytest.fixture
def env(fake_site) -> dict[str, str]:
    env = fake_site(["scripted"])
    env["CRAB_PLUGINS"] = "scripted"
    return env


def files(tmp_path: Path, replies: list) -> tuple[str, str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": replies}))
    schema = tmp_path / "city.json"
    schema.write_text(json.dumps(SCHEMA))
    return "scripted/" + str(script), str(schema)


def test_stdout_is_the_validated_json_answer(crab_run, env, tmp_path):
    model, schema = files(
        tmp_path,
        [[{"text": '{"city": "Paris", "population": "many"}'}], [{"text": '{"city": "Paris", "population": 2100000}'}]],
    )
    result = crab_run(["run", "-m", model, "--output-schema", schema, "biggest city?"], env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"city": "Paris", "population": 2100000}


def test_output_json_carries_the_value_as_output(crab_run, env, tmp_path):
    model, schema = files(tmp_path, [[{"text": '{"city": "Oslo", "population": 709037}'}]])
    result = crab_run(["run", "-m", model, "-o", "json", "--output-schema", schema, "city?"], env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["output"] == {"city": "Oslo", "population": 709037}
    assert document["text"] == '{"city": "Oslo", "population": 709037}'


def test_an_answer_that_never_matches_is_one_line_and_exit_1(crab_run, env, tmp_path):
    model, schema = files(tmp_path, [[{"text": "Paris"}], [{"text": '{"city": "Paris"}'}]])
    result = crab_run(["run", "-m", model, "--output-schema", schema, "city?"], env, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip().splitlines()[-1].startswith("crab: the answer does not match the output type")
    assert "field 'population'" in result.stderr


def test_the_config_sets_the_retries(crab_run, env, tmp_path):
    model, schema = files(tmp_path, [[{"text": '{"city": "Paris"}'}], [{"text": '{"city": "P", "population": 1}'}]])
    command = ["run", "-m", model, "--set", "crab.output_retries=0", "--output-schema", schema, "city?"]
    result = crab_run(command, env, cwd=tmp_path)
    assert result.returncode == 1 and "after 1 attempt(s)" in result.stderr


def test_a_bad_schema_file_is_a_usage_error(crab_run, env, tmp_path):
    (tmp_path / "bad.json").write_text("[1, 2")
    result = crab_run(
        ["run", "-m", "scripted/x", "--output-schema", str(tmp_path / "bad.json"), "x"], env, cwd=tmp_path
    )
    assert result.returncode == 2
    assert result.stderr.strip().startswith("crab: --output-schema:") and "is not JSON" in result.stderr
    assert "Traceback" not in result.stderr
    missing = crab_run(["run", "--output-schema", str(tmp_path / "none.json"), "x"], env, cwd=tmp_path)
    assert missing.returncode == 2 and "cannot read" in missing.stderr
