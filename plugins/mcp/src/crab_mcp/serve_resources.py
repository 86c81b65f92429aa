"""``crab mcp serve``: the workspace's files as read-only MCP resources, through crab's own tools.

crab does not open a file here itself: listing is the box's ``glob`` tool (``*``: every file at
any depth, .gitignore honoured, .git and symlinks skipped, at most 1,000) and reading is its
``read`` tool, run through the box like any client call (interception hooks, timeouts), so the
read tool's seatbelt holds: nothing outside the workspace, no symlink out of it, text files
only. Resources are offered only when the box has both tools as read tools (crab-tools-basic
gives them); a file is read in pages up to ``MAX_BYTES`` (then a note says it was cut), its
line-number prefixes taken off. The URIs are ``file://`` URIs of the workspace's files; any
other URI (or a file the read tool refuses) is an error answer with the tool's reason.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

if TYPE_CHECKING:
    from crab.tools import ToolBox

READ, GLOB = "read", "glob"
MAX_BYTES = 1_000_000
"""Characters of one resource served at most."""
_NUMBERED = re.compile(r"^ *\d+\t(.*)$")
_READ_ON = re.compile(r"use offset=(\d+) to read on\]$")


def offered(box: ToolBox) -> bool:
    """Whether the box can list and read files as read tools (else no resources are declared)."""
    tools = box.tools
    return all(name in tools and tools[name].permission == "read" for name in (READ, GLOB))


def _mime(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "text/plain"


async def list_files(box: ToolBox) -> list[Any]:
    """The workspace's files as ``Resource``s (what ``glob *`` lists)."""
    from mcp import types

    found = await box.call(GLOB, {"pattern": "*"})
    if found.is_error:
        return []
    resources = []
    for line in found.content.splitlines():
        if not line or line.startswith("[") or line.startswith("no files match"):
            continue
        path = box.workspace / line
        resources.append(types.Resource(uri=path.as_uri(), name=line, mime_type=_mime(line)))
    return resources


def path_of(box: ToolBox, uri: str) -> str:
    """The path to hand the read tool: relative for a file of the workspace, else as given (the
    read tool refuses what is outside). ``ValueError`` for a URI that is not ``file://``."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        raise ValueError(f"{uri} is not a file:// URI of the workspace (resources/list gives them)")
    path = Path(unquote(parsed.path))
    try:
        return str(path.relative_to(box.workspace))
    except ValueError:
        return str(path)


async def read_file(box: ToolBox, uri: str, mask: Callable[[str], str] = str) -> Any:
    """A ``ReadResourceResult`` with the file's text, ``mask``-ed whole before it is cut (a secret
    the cut at ``MAX_BYTES`` splits is not left with its first part); ``MCPError`` with the read
    tool's reason."""
    from mcp import MCPError, types

    try:
        path = path_of(box, uri)
    except ValueError as exc:
        raise MCPError(types.INVALID_PARAMS, str(exc)) from None
    lines: list[str] = []
    size = 0
    offset = 1
    while True:
        result = await box.call(READ, {"path": path, "offset": offset})
        if result.is_error:
            raise MCPError(types.INVALID_PARAMS, result.content)
        text = result.content
        if text == "(empty file)":
            break
        following: int | None = None
        for line in text.split("\n"):
            numbered = _NUMBERED.match(line)
            if numbered:
                lines.append(numbered.group(1))
                size += len(numbered.group(1)) + 1
                continue
            more = _READ_ON.search(line)
            if more:
                following = int(more.group(1))
            elif line.startswith("["):
                lines.append(line)  # the read tool's own note (a line it cut)
        if following is None or size >= MAX_BYTES:
            break
        offset = following
    body = mask("\n".join(lines) + ("\n" if lines else ""))
    if len(body) > MAX_BYTES:
        body = f"{body[:MAX_BYTES]}\n[… cut at {MAX_BYTES:,} characters]"
    content = types.TextResourceContents(uri=uri, mime_type=_mime(path), text=body)
    return types.ReadResourceResult(contents=[content])
