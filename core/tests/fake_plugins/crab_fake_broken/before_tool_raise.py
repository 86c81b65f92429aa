"""A ``crab_before_tool_call`` checker that raises: every call it checks must be refused."""

import crab


@crab.hookimpl
def crab_before_tool_call(call, tool, ctx):
    raise RuntimeError("checker bug")
