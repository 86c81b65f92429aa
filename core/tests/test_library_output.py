"""Typed results of ``crab.Agent`` (docs/library.md#typed-results): ``output_type`` as a dataclass,
TypedDict, pydantic model, list, union or JSON schema dict; the answer validated, sent back with the
reason, ``crab.OutputError`` naming the field; partial values while it streams; the schema in the
provider's own field where it has one, the request prefix unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import crab
import pytest
from crab.testing import ScriptedProvider

QUIET = {"user_config": False, "project_config": False, "environment": False, "plugins": []}


@dataclass
class City:
    name: str
    population: int
    country: str | None = None


class Point(TypedDict):
    x: float
    y: float


@dataclass
class Error:
    message: str


class NativeProvider(ScriptedProvider):
    """A scripted provider that says it has structured output of its own."""

    structured_output = True


def say(*texts: str) -> list[list[dict[str, Any]]]:
    return [[{"text": text}] for text in texts]


def test_a_dataclass_answer_is_the_typed_output_and_the_schema_rides_on_the_prompt(crab_home: Path):
    provider = ScriptedProvider(say('{"name": "Paris", "population": 2100000}'))
    with crab.Agent(provider=provider, output_type=City, **QUIET) as agent:
        result = agent.run_sync("The biggest city of France?")
    assert result.output == City("Paris", 2100000)
    assert result.text == '{"name": "Paris", "population": 2100000}'
    prompt = provider.requests[0].messages[-1]
    assert isinstance(prompt, crab.messages.UserMessage) and prompt.content.startswith(
        "The biggest city of France?\n\n[crab]"
    )
    assert '"required":["name","population"]' in prompt.content
    assert "output_schema" in provider.requests[0].options  # offered; this provider has no field for it


def test_an_untyped_run_s_output_is_its_text(crab_home: Path):
    with crab.Agent(provider=ScriptedProvider(say("hello")), **QUIET) as agent:
        result = agent.run_sync("hi")
    assert result.output == "hello" == result.text


def test_a_provider_with_structured_output_gets_the_schema_in_its_field_and_the_prefix_stays(crab_home: Path):
    provider = NativeProvider(
        [[{"tool": "shout", "args": {"text": "a"}}], [{"text": '{"name": "Oslo", "population": 700000}'}]]
    )

    def shout(text: str) -> str:
        """Say ``text`` loudly."""
        return text.upper()

    with crab.Agent(provider=provider, tools=[shout], **QUIET) as agent:
        first = agent.run_sync("hi")  # untyped, then a typed run in the same session
        provider.replies = [*provider.replies, *say('{"name": "Oslo", "population": 700000}')]
        result = agent.run_sync("Capital of Norway?", session=first.session_id, output_type=City)
    assert result.output == City("Oslo", 700000)
    typed = provider.requests[-1]
    assert typed.options["output_schema"]["name"] == "City"
    assert typed.options["output_schema"]["schema"]["required"] == ["name", "population"]
    assert typed.messages[-1] == crab.messages.UserMessage("Capital of Norway?")  # the prompt as written
    prefixes = [(r.system, r.tools) for r in provider.requests]
    assert len(prefixes) == 3 and prefixes.count(prefixes[0]) == 3


def test_an_answer_that_does_not_validate_goes_back_with_the_field_and_reason(crab_home: Path):
    provider = ScriptedProvider(
        say('{"name": "Paris", "population": "two million"}', '{"name": "Paris", "population": 2100000}')
    )
    with crab.Agent(provider=provider, output_type=City, **QUIET) as agent:
        result = agent.run_sync("The biggest city of France?")
    assert result.output == City("Paris", 2100000)
    assert result.turns == 2
    retry = provider.requests[1].messages[-1]
    assert isinstance(retry, crab.messages.UserMessage)
    assert "population: expected integer, got string" in retry.content
    assert [type(m).__name__ for m in result.messages] == [
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
    ]


def test_after_the_last_retry_an_output_error_names_the_field_and_keeps_the_result(crab_home: Path):
    provider = ScriptedProvider(say('{"name": "Paris"}', '{"name": "Paris", "population": null}'))
    with crab.Agent(provider=provider, output_type=City, output_retries=1, **QUIET) as agent:
        with pytest.raises(crab.OutputError) as caught:
            agent.run_sync("The biggest city of France?")
        error = caught.value
        assert error.field == "population" and error.attempts == 2
        assert "field 'population'" in str(error) and "\n" not in str(error)
        assert error.result.session_id and error.result.output is None
        assert error.result.text == '{"name": "Paris", "population": null}'
        # The session is intact: it goes on.
        provider.replies = [*provider.replies, *say('{"name": "Lyon", "population": 520000}')]
        assert agent.run_sync("And the next?", session=error.result.session_id).output == City("Lyon", 520000)


def test_the_config_sets_the_retries(crab_home: Path):
    provider = ScriptedProvider(say("no", "no", "no", '{"name": "Rome", "population": 2}'))
    settings = {"crab.output_retries": 3}
    with crab.Agent(provider=provider, output_type=City, settings=settings, **QUIET) as agent:
        assert agent.run_sync("city?").output == City("Rome", 2)


def test_no_retries_means_the_first_bad_answer_fails(crab_home: Path):
    provider = ScriptedProvider(say("Paris, about two million people."))
    with crab.Agent(provider=provider, **QUIET) as agent, pytest.raises(crab.OutputError) as caught:
        agent.run_sync("city?", output_type=City, output_retries=0)
    assert caught.value.field == "" and "not JSON" in caught.value.reason
    assert len(provider.requests) == 1


def test_typed_dicts_lists_unions_and_schema_dicts(crab_home: Path):
    provider = ScriptedProvider(
        say(
            '{"x": 1, "y": 2.5}',
            '{"result": [{"name": "A", "population": 1}, {"name": "B", "population": 2, "country": "C"}]}',
            '```json\n{"result": {"message": "no such city"}}\n```',
            '{"answer": 42}',
        )
    )
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    with crab.Agent(provider=provider, **QUIET) as agent:
        assert agent.run_sync("p", output_type=Point).output == {"x": 1, "y": 2.5}
        cities = agent.run_sync("l", output_type=list[City]).output
        assert cities == [City("A", 1), City("B", 2, "C")]
        either = agent.run_sync("u", output_type=City | Error).output  # type: ignore[call-overload]
        assert either == Error("no such city")
        assert agent.run_sync("d", output_type=schema).output == {"answer": 42}
    wrapped = provider.requests[1].messages[-1].content
    assert '"required":["result"]' in wrapped  # a list travels inside an object


def test_a_pydantic_model_is_validated_by_pydantic(crab_home: Path):
    pydantic = pytest.importorskip("pydantic")

    class Invoice(pydantic.BaseModel):  # type: ignore[misc,name-defined]
        number: str
        total: float

    provider = ScriptedProvider(
        say('{"number": 7, "total": 1}', '{"number": "7", "total": "x"}', '{"number": "7", "total": 9.5}')
    )
    with crab.Agent(provider=provider, **QUIET) as agent:
        result = agent.run_sync("invoice?", output_type=Invoice, output_retries=2)
    assert result.output == Invoice(number="7", total=9.5)
    assert "number: Input should be a valid string" in provider.requests[1].messages[-1].content
    assert "total: Input should be a valid number" in provider.requests[2].messages[-1].content


def test_a_dataclass_run_never_imports_pydantic(crab_home: Path):
    program = (
        "import sys, crab\n"
        "from dataclasses import dataclass\n"
        "from crab.testing import ScriptedProvider\n"
        "@dataclass\n"
        "class A:\n"
        "    n: int\n"
        "p = ScriptedProvider([[{'text': '{\"n\": 1}'}]])\n"
        "with crab.Agent(provider=p, plugins=[], user_config=False, project_config=False, environment=False) as a:\n"
        "    print(a.run_sync('x', output_type=A).output, 'pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "A(n=1) False"


def test_streaming_a_typed_answer_yields_partial_values(crab_home: Path):
    chunks = ['{"name": "Par', 'is", "popu', 'lation": 21', "00000}"]
    provider = ScriptedProvider([[{"text": chunk} for chunk in chunks]])
    with crab.Agent(provider=provider, output_type=City, **QUIET) as agent:
        run = agent.run_stream_sync("city?")
        partials = list(run.stream_output_sync())
        result = run.result_sync()
    assert partials == [
        {"name": "Par"},
        {"name": "Paris"},
        {"name": "Paris", "population": 21},
        {"name": "Paris", "population": 2100000},
    ]
    assert result.output == City("Paris", 2100000)


def test_streaming_async_yields_the_same(crab_home: Path):
    import asyncio

    provider = ScriptedProvider([[{"text": '{"x": 1,'}, {"text": ' "y": 2}'}]])

    async def main() -> list[Any]:
        async with crab.Agent(provider=provider, **QUIET) as agent:
            run = agent.run_stream("p", output_type=Point)
            seen = [value async for value in run.stream_output()]
            assert (await run.result()).output == {"x": 1, "y": 2}
            return seen

    assert asyncio.run(main()) == [{"x": 1}, {"x": 1, "y": 2}]


def test_a_type_crab_cannot_describe_is_a_usage_error_at_once(crab_home: Path):
    with pytest.raises(crab.UsageError, match=r"output_type .* cannot be described as JSON"):
        crab.Agent(provider=ScriptedProvider([]), output_type=dict[int, str], **QUIET)
    with pytest.raises(crab.UsageError, match="output_retries"):
        crab.Agent(provider=ScriptedProvider([]), output_retries=-1, **QUIET)


def test_the_schema_json_a_provider_is_sent_is_plain_json(crab_home: Path):
    provider = NativeProvider(say('{"x": 0, "y": 0}'))
    with crab.Agent(provider=provider, output_type=Point, **QUIET) as agent:
        agent.run_sync("p")
    option = provider.requests[0].options["output_schema"]
    assert json.loads(json.dumps(option)) == {
        "name": "Point",
        "schema": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"],
            "additionalProperties": False,
        },
    }
