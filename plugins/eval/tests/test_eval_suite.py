"""``crab eval``: the starter suite on its scripted solutions, judging, parallel runs, Ctrl-C and --resume."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("eval-starter")]  # one worker runs the starter suite once

STARTER = Path(__file__).resolve().parents[1] / "src" / "crab_eval" / "starter"
CHROMIUM = Path("/usr/bin/chromium")
# Starter tasks whose checks start no interpreter or one small one: for tests about running, not the tasks.
QUICK_TASKS = ["answer-question", "count-lines", "two-step-notes", "fix-json", "new-function"]


def report_of(path: Path) -> dict:
    return json.loads(path.read_text())


def passed_tasks(report: dict) -> dict[str, bool]:
    return {c["task"]: c["passes"] == c["runs"] for c in report["cells"]}


@pytest.fixture(scope="module")
def starter_run(tmp_path_factory, make_crab_env):
    """The whole starter suite once, scripted, with its JSON and HTML reports."""
    root = tmp_path_factory.mktemp("starter")
    env = make_crab_env(root)
    done = env.run(
        "eval",
        "starter",
        "--scripted",
        "--store",
        "jsonl",
        "-j",
        "2",
        "--json",
        str(root / "report.json"),
        "--html",
        str(root / "report.html"),
        "--out",
        str(root / "out"),
    )
    return env, done, root


def test_the_starter_suite_passes_ten_of_ten_on_its_scripted_solutions(starter_run):
    _, done, root = starter_run
    assert done.returncode == 0, done.stdout + done.stderr
    report = report_of(root / "report.json")
    assert len(report["tasks"]) == 10 and report["finished_runs"] == 10
    assert all(passed_tasks(report).values()), passed_tasks(report)
    [total] = report["totals"]
    assert (total["passes"], total["runs"]) == (10, 10)
    low, high = total["interval"]
    assert 0.69 < low < 0.73 and high == 1.0  # Wilson's interval for 10 of 10
    assert total["model_calls"] > 0 and total["tool_calls"] > 0 and total["input_tokens"] > 0
    assert "all tasks" in done.stdout and "10/10" in done.stdout
    sessions = [r["session"] for r in report["runs"]]
    assert len(set(sessions)) == 10 and all(sessions), "each run has a session of its own, kept for replay"


def test_the_html_report_is_self_contained_and_shows_both_charts(starter_run, tmp_path):
    _, _, root = starter_run
    page = (root / "report.html").read_text()
    assert 'id="pass-rate-chart"' in page and 'id="cost-chart"' in page
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    if not CHROMIUM.exists():
        pytest.skip("chromium is not installed: the HTML report is not opened in a browser")
    import subprocess

    shot = root / "report.png"
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,900"]
    # One browser for both: the screenshot to the file, the DOM it rendered to stdout.
    dom = subprocess.run(
        [*command, f"--screenshot={shot}", "--dump-dom", (root / "report.html").as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.is_file() and shot.stat().st_size > 5000, "the screenshot is kept beside the report as the artefact"
    assert dom.stdout.count('class="bar"') >= 2, "both charts rendered their bars"
    assert 'id="pass-rate-chart"' in dom.stdout and 'id="cost-chart"' in dom.stdout


def test_a_broken_solution_fails_exactly_its_task(tmp_path, crab_env):
    env = crab_env
    suite = tmp_path / "suite"
    shutil.copytree(STARTER, suite)
    solution = suite / "off-by-one" / "solution.json"
    solution.write_text(solution.read_text().replace("return items[-n:]", "return items[-n + 1 :]"))
    # Beside one task that passes (the whole suite passing is starter_run's): only the broken one fails.
    tasks = ["--task", "off-by-one", "--task", "count-lines"]
    done = env.run("eval", str(suite), *tasks, "--scripted", "--store", "jsonl", "--json", str(tmp_path / "r.json"))
    assert done.returncode == 1, done.stdout + done.stderr
    results = passed_tasks(report_of(tmp_path / "r.json"))
    assert results == {"off-by-one": False, "count-lines": True}, results
    assert "fail off-by-one [scripted] run 1: check command exited 1" in done.stdout


def test_parallel_runs_share_no_workspace(tmp_path, crab_env):
    env = crab_env
    done = env.run(
        "eval",
        "starter",
        "--scripted",
        "--store",
        "jsonl",
        "--task",
        "count-lines",
        "--task",
        "new-function",
        "-n",
        "3",
        "-j",
        "3",
        "--keep-workspaces",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    runs = report_of(tmp_path / "r.json")["runs"]
    workspaces = [Path(r["workspace"]) for r in runs]
    assert len(runs) == 6 and len(set(workspaces)) == 6
    for run in runs:
        made = sorted(p.name for p in Path(run["workspace"]).iterdir())
        assert made == (["count.txt", "data.csv"] if run["task"] == "count-lines" else ["text.py"]), made
    assert len({r["session"] for r in runs}) == 6
    for workspace in workspaces:
        shutil.rmtree(workspace.parent)  # kept for the test only


def test_ctrl_c_keeps_the_finished_runs_and_resume_runs_only_the_rest(tmp_path, crab_env):
    env = crab_env
    out = tmp_path / "out"
    # Five quick tasks of the starter suite: enough to stop after two and resume three.
    tasks = [a for t in QUICK_TASKS for a in ("--task", t)]
    first = env.popen("eval", "starter", *tasks, "--scripted", "--store", "jsonl", "-j", "1", "--out", str(out))
    runs = out / "runs.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (runs.is_file() and runs.read_text().count("\n") >= 2):
        time.sleep(0.05)
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 130, err
    kept = [json.loads(line)["key"] for line in runs.read_text().splitlines()]
    total = len(QUICK_TASKS)
    assert 2 <= len(kept) < total, "interrupted mid-suite"
    assert "--resume" in err and "Traceback" not in err

    second = env.run(
        "eval", "starter", *tasks, "--scripted", "--store", "jsonl", "-j", "2", "--out", str(out), "--resume"
    )
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"resuming: {len(kept)} of {total} runs already finished" in second.stderr
    started = [line for line in second.stderr.splitlines() if line.startswith("[")]
    assert len(started) == total - len(kept)
    every = [json.loads(line)["key"] for line in runs.read_text().splitlines()]
    assert len(every) == total and len(set(every)) == total and every[: len(kept)] == kept


def test_a_malformed_task_is_one_line_and_exit_2(tmp_path, crab_env):
    env = crab_env
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "t.toml").write_text('prompt = "x"\n[check]\ncommand = "true"\ncolour = "red"\n')
    done = env.run("eval", str(suite))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "unknown key [check] 'colour'" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_an_eval_session_with_two_prompts_is_kept_and_replays_the_same(starter_run, tmp_path):
    env, _, root = starter_run
    [run] = [r for r in report_of(root / "report.json")["runs"] if r["task"] == "two-step-notes"]
    empty = tmp_path / "empty"
    empty.mkdir()
    done = env.run("replay", run["session"], "--store", "jsonl", "--workspace", str(empty))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("3 calls: 3 same, none differs"), done.stdout
    assert list(empty.iterdir()) == []


def test_a_key_a_check_prints_is_masked_in_every_report(tmp_path, crab_env):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "solution.json").write_text(json.dumps({"replies": [[{"text": "done"}]]}))
    leak = "import os, sys; print('key', os.environ['DEMO_API_KEY']); sys.exit(1)"
    (suite / "leak.toml").write_text(
        f'prompt = "go"\n[check]\ncommand = ["{{python}}", "-c", "{leak}"]\n[scripted]\nsolution = "solution.json"\n'
    )
    key = "sk-demo-0123456789abcdef"
    out, report = tmp_path / "out", tmp_path / "r.json"
    done = crab_env.run(
        "eval", str(suite), "--scripted", "--json", str(report), "--out", str(out), env={"DEMO_API_KEY": key}
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "check command exited 1: key [redacted]" in done.stdout
    for text in (done.stdout, done.stderr, report.read_text(), (out / "runs.jsonl").read_text()):
        assert key not in text


@pytest.mark.parametrize(("verdict", "passed"), [("PASS: it says hello", True), ("FAIL: no greeting", False)])
def test_a_rubric_is_judged_by_the_judge_model(tmp_path, crab_env, verdict, passed):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "solution.json").write_text(json.dumps({"replies": [[{"text": "hello there"}]]}))
    (suite / "greet.toml").write_text(
        'prompt = "greet me"\n[check]\njudge = "The answer greets the user."\n[scripted]\nsolution = "solution.json"\n'
    )
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"replies": [[{"text": verdict}]]}))
    alone = crab_env.run("eval", str(suite), "--scripted")
    assert alone.returncode == 2 and "pass --judge-model MODEL" in alone.stderr
    done = crab_env.run("eval", str(suite), "--scripted", "--judge-model", f"mock/{judge}", "--output", "jsonl")
    assert done.returncode == (0 if passed else 1), done.stdout + done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["type"] for e in events] == ["run", "report"]
    assert events[0]["passed"] is passed
    assert events[0]["reasons"] == ([] if passed else ["the judge: FAIL: no greeting"])


def test_two_models_are_two_configurations_side_by_side(tmp_path, crab_env):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "hello.toml").write_text('prompt = "write hello.txt"\n[check]\nfiles = { "hello.txt" = "hello" }\n')
    good = crab_env.script("good.json", [[{"tool": "write", "args": {"path": "hello.txt", "content": "hello"}}], []])
    bad = crab_env.script("bad.json", [[{"text": "no"}]])
    report = tmp_path / "r.json"
    done = crab_env.run(
        "eval", str(suite), "-m", f"mock/{good}", "-m", f"mock/{bad},crab.tool_view=full", "-n", "2",
        "--json", str(report), "--set", "crab.max_iterations=4",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    data = report_of(report)
    assert data["configurations"] == [f"mock/{good}", f"mock/{bad},crab.tool_view=full"]
    assert [(t["passes"], t["runs"]) for t in data["totals"]] == [(2, 2), (0, 2)]
    assert f"mock/{bad},crab.tool_view=full beside mock/{good}:" in done.stdout
    wrong = crab_env.run("eval", str(suite), "--set", "max_iterations")
    assert wrong.returncode == 2 and "write KEY=VALUE" in wrong.stderr


def test_a_task_name_that_is_a_path_is_one_line_and_exit_2(tmp_path, crab_env):
    """The name goes into the run's temporary folder's name: a slash in it was a traceback."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "t.toml").write_text('name = "x/../../y"\nprompt = "x"\n[check]\nanswer = "x"\n')
    done = crab_env.run("eval", str(suite))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "name must be one word" in done.stderr and len(done.stderr.strip().splitlines()) == 1
