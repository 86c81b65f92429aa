"""Helpers for tools beside the types in ``crab`` (``tool``, ``Tool``, ``ToolContext``…): running
a call as the loop does (``run_tool``, ``preview_diffs``), cutting output to a limit, writing a
file atomically, a folder's tools without an agent (``open_toolbox``), and whether a small file
may be read on the event loop rather than in a thread (``local_file_io``, ``run_blocking``)."""

from crab._assembly.toolbox import ToolBox, open_toolbox
from crab._contracts.truncate import OutputLimit, Truncation
from crab._loop.tool_exec import preview_diffs, run_tool
from crab._system.atomic import write_atomic
from crab._system.local_io import local_file_io, run_blocking
from crab._values.truncate import describe as describe_truncation
from crab._values.truncate import truncate as truncate_output

__all__ = [
    "OutputLimit",
    "ToolBox",
    "Truncation",
    "describe_truncation",
    "local_file_io",
    "open_toolbox",
    "preview_diffs",
    "run_blocking",
    "run_tool",
    "truncate_output",
    "write_atomic",
]
