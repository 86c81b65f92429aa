"""An MCP ``CallToolResult`` as a crab ``ToolResult``.

Text blocks are joined; an ``ImageContent`` block (PNG, JPEG, GIF or WebP, base64) becomes an
image of the result, which the model sees, with a one-line note in the text where it was; an
image crab does not keep (another type, bytes that are not what the block says) and an audio block
become a one-line note (type, size); a resource link shows its URI and an embedded resource its
text (or its URI when it is binary). Structured content is kept in ``details`` and becomes the
text when the server sent no content. ``is_error`` stays an error result.

A result may be as large as the transport allows (``max_message``, 32 MB by default); ``cut``
keeps what the model may read of it (``MODEL_LIMIT``, the limit every crab tool has) and says
what it left out. crab-mcp cuts before it fences the text, so the fence always closes.
"""

from __future__ import annotations

import json
from typing import Any

from crab import ToolResult
from crab.messages import ImagePart
from crab.tools import OutputLimit, describe_truncation, truncate_output

MODEL_LIMIT = OutputLimit()
"""What the model reads of one result: crab's default tool output limit (2,000 lines, 50 KB)."""


def image_of(block: Any) -> ImagePart | None:
    """The image an MCP ``ImageContent`` block carries, when it is one crab keeps; else None."""
    import base64
    import binascii

    if getattr(block, "type", "") != "image":
        return None
    try:
        data = base64.b64decode(str(getattr(block, "data", "") or ""), validate=True)
        image = ImagePart.from_bytes(data)
    except (binascii.Error, ValueError):
        return None
    return image if image.media_type == getattr(block, "mime_type", image.media_type) else None


def _block(block: Any, image: ImagePart | None = None) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if image is not None:
        return f"[image {image.describe()}]"
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
    blocks = list(result.content or [])
    images = [image_of(b) for b in blocks]
    parts = [_block(b, image) for b, image in zip(blocks, images, strict=True)]
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
    kept = tuple(image for image in images if image is not None)
    return ToolResult(text, is_error=bool(getattr(result, "is_error", False)), details=details, images=kept)


def cut(result: ToolResult, limit: OutputLimit = MODEL_LIMIT) -> tuple[ToolResult, str | None]:
    """``result`` cut to ``limit``, and the note saying so (None when nothing was cut)."""
    text, truncation = truncate_output(result.content, limit)
    if truncation is None:
        return result, None
    note = describe_truncation(
        truncation, limit, "the MCP server sent it whole; ask the tool for less (a narrower query, a page) for the rest"
    )
    kept = ToolResult(text.rstrip("\n"), result.is_error, result.details, images=result.images)
    return kept, note
