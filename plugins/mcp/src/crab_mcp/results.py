"""An MCP ``CallToolResult`` as a crab ``ToolResult``.

Text blocks are joined; an image or audio block becomes a one-line note (type, size), since
crab's tool results are text; a resource link shows its URI and an embedded resource its text
(or its URI when it is binary). Structured content is kept in ``details`` and becomes the text
when the server sent no content. ``is_error`` stays an error result.
"""

from __future__ import annotations

import json
from typing import Any

from crab import ToolResult


def _block(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        size = len(getattr(block, "data", "") or "") * 3 // 4
        return f"[{kind} {getattr(block, 'mime_type', '') or '?'}, about {size} bytes, not shown]"
    if kind == "resource_link":
        name = getattr(block, "name", "") or ""
        return f"[resource link {name}: {block.uri}]".replace(" :", ":")
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        mime = getattr(resource, "mime_type", None) or "binary"
        return f"[resource {resource.uri} ({mime}), not shown]"
    return f"[{kind or 'unknown'} content, not shown]"


def to_tool_result(result: Any) -> ToolResult:
    """The crab result of one MCP tool call (see the module docstring)."""
    parts = [_block(b) for b in result.content or []]
    structured = getattr(result, "structured_content", None)
    text = "\n".join(p for p in parts if p)
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False, default=str)
    if not text:
        text = "(no output)"
    details: dict[str, Any] = {}
    if structured is not None:
        details["structured_content"] = structured
    kinds = sorted({getattr(b, "type", "") for b in result.content or []} - {"text"})
    if kinds:
        details["content_types"] = kinds
    return ToolResult(text, is_error=bool(getattr(result, "is_error", False)), details=details)
