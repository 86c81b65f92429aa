"""``ProviderContract`` in a plugin made by ``crab plugin new --kind provider``: its pyproject's
``--strict-markers`` collects the contract (whose end-to-end tests are marked ``slow``), a provider
that keeps the rules passes, and one that breaks a rule fails with a line saying what it must do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"

CONTRACT_TEST = """
import os
from pathlib import Path

from crab_provider_kit import ProviderContract

from crab_toyp import toy


class TestToypContract(ProviderContract):
    fixtures = Path(__file__).parent / "fixtures"
    key_env, model = toy.KEY_ENV, "toy-1"
    text_stream, text, text_cut_after = "text.sse", "hello", 2
    tool_stream, tool_cut_after = "tool.sse", 1
    missing_end_stream, end_marker = "cut.sse", "[DONE]"
    malformed_event, malformed_at = b'data: {"text": 5}\\n\\n', 1
    plugin, cli_model, auth_name = "toyp", "toy/toy-1", "toy"

    def make_provider(self, table, env):
        return toy.ToyProvider(table, env=env)

    def error_body(self, kind, message):
        return {"error": {"message": message, "type": kind}}

    def test_the_end_to_end_tests_are_marked_slow(self):
        marks = [mark.name for mark in self.test_key_never_printed_or_stored.pytestmark]
        assert "slow" in marks
"""

RULES = """

# What the README's toy leaves out and the contract asks of a provider: a 401 naming the key
# variable, a 404 naming the model, a 413 as a context overflow, a 503 retried, tool calls.
_readme_classify = classify


def classify(status: int, body: str) -> crab.ProviderError:
    if status == 404 and os.environ.get("TOYP_BROKEN"):  # the rule broken on purpose
        return crab.ProviderError(f"toy: HTTP 404: {body[:200]}", kind="invalid_request", retryable=False)
    if status == 401:
        return crab.ProviderError(f"toy: the API key was refused: set {KEY_ENV}", kind="auth", retryable=False)
    if status == 413:
        return crab.ContextOverflowError(f"toy: HTTP 413: {body[:200]}")
    error = _readme_classify(status, body)
    if error.kind == "overloaded":
        return crab.ProviderError(str(error), kind="overloaded", retryable=True)
    return error


class ToyParser(ToyParser):
    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.calls = []

    def feed(self, event):
        if event.data != self.end_marker and "tool" in json.loads(event.data):
            data = json.loads(event.data)
            self.calls.append(crab.messages.ToolCall(f"call_{len(self.calls)}", data["tool"], data["args"]))
            return []
        return super().feed(event)

    def finish(self):
        [end] = super().finish()
        return [crab.events.MessageEnd(replace(end.message, tool_calls=tuple(self.calls)))]
"""


def readme_provider() -> str:
    text = README.read_text()
    start = text.index("```python\n", text.index("## Example")) + len("```python\n")
    return text[start : text.index("\n```", start)]


def generated_provider(tmp_path: Path) -> Path:
    root = tmp_path / "crab-toyp"
    made = subprocess.run(
        [sys.executable, "-m", "crab", "plugin", "new", "toyp", "--kind", "provider", "--dir", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    assert "--strict-markers" in (root / "pyproject.toml").read_text()
    (root / "src" / "crab_toyp" / "toy.py").write_text("from dataclasses import replace\n" + readme_provider() + RULES)
    fixtures = root / "tests" / "fixtures"
    fixtures.mkdir()
    tool = 'data: {"tool": "get_weather", "args": {"city": "Oslo"}}\n\n'
    (fixtures / "text.sse").write_text('data: {"text": "hel"}\n\ndata: {"text": "lo"}\n\ndata: [DONE]\n\n')
    (fixtures / "tool.sse").write_text('data: {"text": "Looking."}\n\n' + tool + "data: [DONE]\n\n")
    (fixtures / "cut.sse").write_text('data: {"text": "Looking."}\n\n' + tool)
    (root / "tests" / "test_toyp_contract.py").write_text(CONTRACT_TEST)
    return root


def run_contract(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    # The end-to-end tests need the plugin installed (the crab command loads it by entry point):
    # deselected by their marker, which --strict-markers must still know to collect them at all.
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "not slow", "tests/test_toyp_contract.py"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root / "src"), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_generated_provider_with_strict_markers_collects_and_passes_the_contract(tmp_path: Path) -> None:
    root = generated_provider(tmp_path)
    result = run_contract(root)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "deselected" in result.stdout, result.stdout[-1000:]


def test_a_provider_breaking_a_rule_fails_with_the_rule(tmp_path: Path) -> None:
    root = generated_provider(tmp_path)
    result = run_contract(root, TOYP_BROKEN="1")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 failed" in result.stdout, result.stdout[-3000:]
    assert "AssertionError: a 404 for a model must be a ProviderError of kind 'model_not_found'" in result.stdout
