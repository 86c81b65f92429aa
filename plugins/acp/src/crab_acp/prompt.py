"""An ACP prompt (content blocks) as the one text crab's turn takes.

Text blocks are the user's words. A resource link (an ``@file`` mention the editor did not
embed) becomes a line naming it, so the model can read it with its tools; an embedded text
resource (a file or selection the editor attached, unsaved edits included) is inlined in a
``<context>`` block naming its URI. Blobs, images and audio are not sent to the model: crab's
turns take text (``promptCapabilities`` says so), and a line says what was left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlparse

from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)


def _where(uri: str) -> str:
    """A file URI as its path (what crab's tools take); any other URI as it is."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def prompt_text(blocks: Sequence[Any]) -> str:
    """The turn's input for ``blocks``, in their order."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"[@{block.name}]({_where(block.uri)})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(f'\n<context ref="{_where(resource.uri)}">\n{resource.text}\n</context>\n')
            elif isinstance(resource, BlobResourceContents):
                parts.append(f"[binary resource {_where(resource.uri)} attached; crab cannot show it to the model]")
        elif isinstance(block, ImageContentBlock):
            parts.append("[an image was attached; crab sends only text to the model]")
        elif isinstance(block, AudioContentBlock):
            parts.append("[an audio clip was attached; crab sends only text to the model]")
    text = ""
    for part in parts:
        if text and part and not text[-1].isspace() and not part[0].isspace():
            text += " "
        text += part
    return text
