"""An ACP prompt (content blocks) as the one text crab's turn takes.

Text blocks are the user's words. A resource link (an ``@file`` mention the editor did not
embed) becomes a line naming it, so the model can read it with its tools; an embedded text
resource (a file or selection the editor attached, unsaved edits included) is inlined in a
``<context>`` block naming its URI. An image block becomes a ``crab.messages.ImagePart`` sent with the
text (its type read from its bytes, not from what the editor says; the turn's ``[crab]
max_image_bytes`` cap applies). Blobs and audio are not sent to the model (``promptCapabilities``
says so), and a line says what was left out, as for an image that cannot be read.
"""

from __future__ import annotations

import base64
import binascii
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
from crab.messages import ImagePart


def _where(uri: str) -> str:
    """A file URI as its path (what crab's tools take); any other URI as it is."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def _image(block: ImageContentBlock) -> ImagePart | str:
    """The image ``block`` carries, or the line saying why it cannot go to the model."""
    try:
        data = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return "[an attached image was not valid base64 and was left out]"
    try:
        return ImagePart.from_bytes(data)
    except ValueError as exc:
        return f"[an attached image was left out: {exc}]"


def prompt_text(blocks: Sequence[Any]) -> str:
    """The turn's text input for ``blocks``, in their order (images: ``prompt_parts``)."""
    return prompt_parts(blocks)[0]


def prompt_parts(blocks: Sequence[Any]) -> tuple[str, list[ImagePart]]:
    """The turn's input for ``blocks``: the text, in their order, and the images."""
    parts: list[str] = []
    images: list[ImagePart] = []
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
            image = _image(block)
            if isinstance(image, ImagePart):
                images.append(image)
            else:
                parts.append(image)
        elif isinstance(block, AudioContentBlock):
            parts.append("[an audio clip was attached; crab sends only text to the model]")
    text = ""
    for part in parts:
        if text and part and not text[-1].isspace() and not part[0].isspace():
            text += " "
        text += part
    return text, images
