"""A ``crab_after_tool_call`` hook that raises: the result must be withheld, not sent unchecked."""

import crab


@crab.hookimpl
def crab_after_tool_call(call, tool, result, ctx):
    raise RuntimeError("scrubber bug")
