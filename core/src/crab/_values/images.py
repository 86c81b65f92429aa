"""Images on their way to the store and back (work on the contracts' values, through the ``BlobStore``
Protocol the loop passes in): their bytes kept once in the store's blobs (inline base64 where a store
keeps none), filled back before a request (``load_images``), capped (``ImageLimits``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from crab._contracts.config import DEFAULT_MAX_IMAGE_BYTES, DEFAULT_MAX_IMAGE_SIDE
from crab._contracts.errors import CrabError
from crab._contracts.images import ImagePart
from crab._contracts.messages import Message, ToolResultMessage, UserMessage
from crab._contracts.storage import BlobStore, Store
from crab._values.image_fit import fit_image
from crab._values.message_json import message_to_dict

MAX_IMAGES = 20
"""Images one tool result (or one prompt's added context) may carry: each stays in the session
and goes with every later request, so a tool or server answering with hundreds must not."""


@dataclass(frozen=True, slots=True)
class ImageLimits:
    """``[crab] max_image_bytes`` and ``max_image_side``."""

    max_bytes: int = DEFAULT_MAX_IMAGE_BYTES
    max_side: int = DEFAULT_MAX_IMAGE_SIDE

    def fit(self, image: ImagePart) -> ImagePart:
        """``image`` downscaled where it can be, or ``ImageTooLarge`` (see ``fit_image``)."""
        return fit_image(image, self.max_bytes, self.max_side)

    def fit_result(self, images: Sequence[ImagePart]) -> tuple[tuple[ImagePart, ...], list[str]]:
        """The images of a tool result within the caps (``MAX_IMAGES`` of them at most), and a
        note for each one left out."""
        kept: list[ImagePart] = []
        notes: list[str] = []
        for image in images[:MAX_IMAGES]:
            try:
                kept.append(self.fit(image))
            except CrabError as exc:
                notes.append(f"[image left out: {exc}]")
        if len(images) > MAX_IMAGES:
            notes.append(f"[{len(images) - MAX_IMAGES} more images left out: at most {MAX_IMAGES} per result]")
        return tuple(kept), notes


async def message_payload(store: Store, message: Message) -> dict[str, Any]:
    """``message_to_dict(message)`` with its images' bytes put in the store's blobs first (or
    inlined when the store keeps no blobs)."""
    images = message.images if isinstance(message, UserMessage | ToolResultMessage) else ()
    if not images:
        return message_to_dict(message)
    if not isinstance(store, BlobStore):
        return message_to_dict(message, inline_images=True)
    for image in images:
        if image.loaded:
            await store.put_blob(image.data)
    return message_to_dict(message)


MISSING = "[image {label} is missing from the session store]"


async def load_images(store: Store, messages: list[Message], cache: dict[str, bytes]) -> list[Message] | None:
    """``messages`` with every image's bytes filled from the store; None when all were loaded.

    Context read back from the store (a resume, a compaction's kept tail) names images without
    bytes; an image the store has lost becomes a one-line note, so a provider never receives an
    image without bytes. ``cache`` (the session's) keeps blobs read, so a session reads each once.
    """
    if not any(_unloaded(m) for m in messages):
        return None
    blobs = store if isinstance(store, BlobStore) else None
    out: list[Message] = []
    for message in messages:
        if not _unloaded(message):
            out.append(message)
            continue
        assert isinstance(message, UserMessage | ToolResultMessage)
        images: list[ImagePart] = []
        notes: list[str] = []
        for image in message.images:
            if image.loaded:
                images.append(image)
                continue
            data = cache.get(image.sha256)
            if data is None and blobs is not None:
                data = await blobs.get_blob(image.sha256)
            try:
                filled = image.with_data(data) if data else None
            except ValueError:  # the store returned other bytes than the hash names
                filled = None
            if filled is None:
                notes.append(MISSING.format(label=image.describe()))
                continue
            cache[image.sha256] = filled.data
            images.append(filled)
        content = "\n".join([message.content, *notes]) if notes else message.content
        out.append(replace(message, content=content, images=tuple(images)))
    return out


def _unloaded(message: Message) -> bool:
    return isinstance(message, UserMessage | ToolResultMessage) and any(not i.loaded for i in message.images)
