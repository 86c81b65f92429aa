"""``@crab.tool``: a ``Tool`` from a typed function (its schema from the hints and docstring, its
handler passing the call's context), and ``as_result``, what a tool function returned as a ``ToolResult``."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any, overload

from crab._contracts.images import ImagePart
from crab._contracts.tools import PERMISSIONS, Handler, Permission, Preview, Tool, ToolContext, ToolResult
from crab._contracts.truncate import OutputLimit
from crab._values.tool_schema import function_schema


def as_result(value: Any) -> ToolResult:
    """Turn what a tool function returned into a ``ToolResult`` (str as is, an ``ImagePart`` as an
    image result, others as JSON)."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, ImagePart):
        return ToolResult(f"(image: {value.describe()})", images=(value,))
    if isinstance(value, str):
        return ToolResult(value)
    if value is None:
        return ToolResult("(no output)")
    try:
        return ToolResult(json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return ToolResult(str(value))


def _is_context(name: str, hint: Any) -> bool:
    from typing import get_args

    candidates = (hint, *get_args(hint))
    return any(c is ToolContext or c == "ToolContext" for c in candidates) or (name == "ctx" and hint is Any)


def _is_run_context(hint: Any) -> bool:
    from typing import get_origin

    from crab._contracts.run_context import RunContext

    return hint is RunContext or get_origin(hint) is RunContext


def _make_handler(fn: Callable[..., Any], context_param: str | None, run_param: str | None = None) -> Handler:
    def handler(args: dict[str, Any], ctx: ToolContext) -> Any:
        kwargs = dict(args)
        if context_param is not None:
            kwargs[context_param] = ctx
        if run_param is not None:
            from crab._contracts.run_context import run_context

            kwargs[run_param] = run_context(ctx)
        return fn(**kwargs)  # a coroutine function's coroutine is awaited by whoever runs the tool

    return handler


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    permission: Permission = "read",
    exclusive: bool = False,
    timeout: float | None = None,
    override: bool = False,
    output_limit: OutputLimit | None = OutputLimit(),
    prepare_arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    preview: Preview | None = None,
) -> Tool:
    """Build a ``Tool`` from a typed function (what ``@crab.tool`` does)."""
    if permission not in PERMISSIONS:
        raise ValueError(f"permission must be one of {', '.join(PERMISSIONS)}, not {permission!r}")
    context_params: list[str] = []
    run_params: list[str] = []

    def skip(param: str, hint: Any) -> bool:
        if _is_run_context(hint):
            run_params.append(param)
            return True
        if _is_context(param, hint):
            context_params.append(param)
            return True
        return False

    parameters, doc_description = function_schema(fn, skip)
    text = description if description is not None else doc_description
    if not text:
        raise ValueError(f"tool {fn.__name__} needs a description: give it a docstring")
    return Tool(
        name=name or fn.__name__,
        description=text,
        parameters=parameters,
        handler=_make_handler(fn, context_params[0] if context_params else None, run_params[0] if run_params else None),
        permission=permission,
        exclusive=exclusive,
        timeout=timeout,
        override=override,
        output_limit=output_limit,
        prepare_arguments=prepare_arguments,
        fn=fn,
        preview=preview,
        blocking=not inspect.iscoroutinefunction(fn),
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    permission: Permission = "read",
    exclusive: bool = False,
    timeout: float | None = None,
    override: bool = False,
    output_limit: OutputLimit | None = OutputLimit(),
    prepare_arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    preview: Preview | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(fn: Callable[..., Any] | None = None, /, **options: Any) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function into a ``Tool``: ``@crab.tool`` or ``@crab.tool(permission="write")``.

    The name is the function's name, the description its docstring (per-parameter text from an
    ``Args:`` section or ``:param x:`` lines, or ``Annotated[str, "text"]``), the schema comes
    from the type hints. A parameter typed ``ToolContext`` receives the call's context.
    """
    if fn is not None:
        return make_tool(fn, **options)

    def decorate(func: Callable[..., Any]) -> Tool:
        return make_tool(func, **options)

    return decorate
