"""``@crab.tool``: schema from hints and docstrings, validation before the call, results and limits."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Literal, TypedDict

import crab
import pytest
from crab._contracts.tools import ToolContext
from crab._values.tool_schema import SchemaError, parse_docstring


class Pair(TypedDict):
    old: str
    new: str


@crab.tool(permission="write")
def sample(
    path: str,
    count: int,
    ratio: float = 0.5,
    flag: bool = False,
    tags: list[str] | None = None,
    meta: dict[str, int] | None = None,
    mode: Literal["fast", "slow"] = "fast",
    note: Annotated[str, "a note for the log"] = "",
    pairs: list[Pair] | None = None,
    ctx: ToolContext | None = None,
) -> str:
    """Do a sample thing.

    Longer explanation that stays in the description.

    Args:
        path: Where to do it.
        count: How many times,
            at most 10.
    """
    assert ctx is not None
    return f"{path}:{count}:{ctx.session_id}"


def run(tool: crab.Tool, args: dict) -> crab.ToolResult:
    return asyncio.run(crab.tools.run_tool(tool, args, ToolContext("s1", Path("."))))


def test_schema_from_hints_and_docstring():
    schema = sample.parameters
    props = schema["properties"]
    assert schema["required"] == ["path", "count"]
    assert schema["additionalProperties"] is False
    assert props["path"] == {"type": "string", "description": "Where to do it."}
    assert props["count"] == {"type": "integer", "description": "How many times, at most 10."}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["flag"] == {"type": "boolean", "default": False}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["meta"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["mode"] == {"enum": ["fast", "slow"], "type": "string", "default": "fast"}
    assert props["note"]["description"] == "a note for the log"
    assert props["pairs"]["items"]["required"] == ["new", "old"]
    assert "ctx" not in props
    assert sample.description == "Do a sample thing.\n\nLonger explanation that stays in the description."
    assert sample.permission == "write"
    assert sample.name == "sample"


def test_sphinx_docstrings():
    description, params = parse_docstring("Summary.\n\n:param x: the x\n:param int y: the y\n:returns: nothing")
    assert description == "Summary."
    assert params == {"x": "the x", "y": "the y"}


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"count": 1}, "missing required 'path'"),
        ({"path": 1, "count": 1}, "path: expected string, got integer"),
        ({"path": "p", "count": "3"}, "count: expected integer, got string"),
        ({"path": "p", "count": True}, "count: expected integer, got boolean"),
        ({"path": "p", "count": 1, "mode": "medium"}, "mode: 'medium' is not one of 'fast', 'slow'"),
        ({"path": "p", "count": 1, "extra": 1}, "unknown 'extra' (expected: path, count"),
        ({"path": "p", "count": 1, "pairs": [{"old": "a"}]}, "pairs[0]: missing required 'new'"),
        ({"path": "p", "count": 1, "tags": ["a", 2]}, "tags[1]: expected string, got integer"),
    ],
)
def test_invalid_arguments_become_error_results(args, problem):
    result = run(sample, args)
    assert result.is_error
    assert result.content.startswith("invalid arguments for sample: ")
    assert problem in result.content


def test_valid_call_gets_context_and_null_optionals():
    assert run(sample, {"path": "p", "count": 2, "tags": None}).content == "p:2:s1"
    assert run(sample, {"path": "p", "count": 2, "ratio": 1}).content == "p:2:s1"  # int is a number


def test_async_tools_tool_error_and_results():
    @crab.tool
    async def fails(reason: str) -> str:
        """Fail on purpose."""
        raise crab.ToolError(f"cannot: {reason}")

    @crab.tool
    def structured() -> dict:
        """Return structured data."""
        return {"a": [1, 2]}

    failed = run(fails, {"reason": "why"})
    assert failed.is_error and failed.content == "cannot: why"
    assert run(structured, {}).content == '{"a": [1, 2]}'


def test_output_is_truncated_with_a_note():
    @crab.tool(output_limit=crab.tools.OutputLimit(lines=3, bytes=1000))
    def many() -> str:
        """Print many lines."""
        return "\n".join(f"line {i}" for i in range(10))

    content = run(many, {}).content
    assert content.splitlines()[:3] == ["line 0", "line 1", "line 2"]
    assert "[output truncated: showing the first 3 of 10 lines" in content
    assert "line 3" not in content


def test_prepare_arguments_accepts_other_shapes():
    def aliases(args: dict) -> dict:
        if "file_path" in args:
            args["path"] = args.pop("file_path")
        return args

    @crab.tool(prepare_arguments=aliases)
    def where(path: str) -> str:
        """Say where."""
        return path

    assert run(where, {"file_path": "x"}).content == "x"


def test_unsupported_hints_and_missing_docstring_fail_at_definition():
    with pytest.raises(SchemaError, match="unsupported type hint"):

        @crab.tool
        def bad(x: set[int]) -> str:
            """Bad."""
            return ""

    with pytest.raises(ValueError, match="needs a description"):

        @crab.tool
        def undocumented(x: int) -> str:
            return ""


def test_a_cancelled_sync_tool_is_told_to_stop():
    import threading
    import time

    started = threading.Event()
    stopped = threading.Event()

    @crab.tool
    def spin(ctx: ToolContext) -> str:
        """Loop until told to stop."""
        started.set()
        deadline = time.monotonic() + 10
        while not ctx.cancelled.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        stopped.set()
        return "stopped"

    ctx = ToolContext("s", Path("."))

    async def scenario() -> None:
        try:
            await asyncio.wait_for(crab.tools.run_tool(spin, {}, ctx), 0.2)
        except TimeoutError:
            pass

    asyncio.run(scenario())
    assert started.is_set()
    assert stopped.wait(5)
    assert ctx.cancelled.is_set()


def test_a_tool_is_data_and_the_loop_runs_a_blocking_handler_in_a_thread_of_its_own():
    import threading

    @crab.tool
    def plain() -> str:
        """Answer from wherever it runs."""
        return threading.current_thread().name

    @crab.tool
    async def awaited() -> str:
        """Answer on the event loop."""
        return threading.current_thread().name

    assert (plain.blocking, awaited.blocking) == (True, False)
    assert not hasattr(plain, "run")  # carrying a call out is the loop's (crab.tools.run_tool), not the Tool's
    by_hand = crab.Tool(
        "by_hand", "Blocks.", {"type": "object"}, lambda args, ctx: threading.current_thread().name, blocking=True
    )
    ctx = ToolContext("s", Path("."))
    main = threading.current_thread().name
    names = [asyncio.run(crab.tools.run_tool(tool, {}, ctx)).content for tool in (plain, awaited, by_hand)]
    assert names[1] == main and names[0] != main and names[2] != main


def test_a_tools_spec_is_made_once_and_again_when_what_it_shows_is_replaced():
    """``Tool.spec`` is asked for every tool on every request: it is kept, but never outlives a
    replaced name, description or parameters (a plugin or MCP server updating its tool in place)."""
    import dataclasses

    from crab import Tool

    made = Tool("look", "Look.", {"type": "object"}, lambda args, ctx: "ok")
    first = made.spec()
    assert made.spec() is first and (first.name, first.description) == ("look", "Look.")
    made.description = "Look closer."
    assert made.spec().description == "Look closer."
    made.parameters = {"type": "object", "properties": {"x": {"type": "string"}}}
    assert made.spec().parameters is made.parameters
    made.name = "peer"
    assert made.spec().name == "peer"
    copy = dataclasses.replace(made, description="A copy.")
    assert copy.spec().description == "A copy." and made.spec().description == "Look closer."
    assert "_spec=" not in repr(copy) and "_spec" not in {f.name for f in dataclasses.fields(copy)}
