"""Photos and image documents a user sent, fetched from Telegram and handed on as image parts.

A photo (always JPEG on Telegram) is fetched in its largest size; a document is fetched when its
MIME type or file name says it is a PNG, JPEG, GIF or WebP image, and kept only when its bytes
say so too. What cannot be fetched, or is no image, stays a one-line note in the text, so the
model still learns something was attached. Downscaling and the size cap are the loop's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import crab

from crab_telegram.api import BotApi, TelegramError
from crab_telegram.incoming import Attachment

DOWNLOAD_LIMIT = 20 * 1024 * 1024
"""The most Telegram lets a bot download (``getFile``), and so the most crab fetches."""
_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


@dataclass
class Fetched:
    """The image parts of a message's attachments, and a note for each one that is not one."""

    images: list[crab.messages.ImagePart] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def is_image(attachment: Attachment) -> bool:
    """Whether an attachment should be fetched as an image (a photo, or an image document)."""
    if attachment.kind == "photo":
        return True
    name = (attachment.file_name or "").lower()
    return attachment.mime_type in crab.messages.IMAGE_TYPES or name.endswith(_SUFFIXES)


async def fetch_images(api: BotApi, attachments: Sequence[Attachment]) -> Fetched:
    """Every image attachment's bytes as an ``ImagePart``; the others described in a note."""
    fetched = Fetched()
    for attachment in attachments:
        if not is_image(attachment):
            fetched.notes.append(attachment.describe())
            continue
        try:
            data = await api.download(attachment.file_id, DOWNLOAD_LIMIT)
            fetched.images.append(crab.messages.ImagePart.from_bytes(data))
        except TelegramError as exc:
            fetched.notes.append(f"[{attachment.kind} attached, but crab could not fetch it: {exc}]")
        except ValueError:
            fetched.notes.append(f"[{attachment.kind} attached: {attachment.file_name or 'a file'}, not an image]")
    return fetched
