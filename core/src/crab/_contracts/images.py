"""Image parts of messages (on ``UserMessage``, ``ToolResultMessage``, ``ToolResult``): bytes with
media type and sha256, sniffing, and the error past the size cap (the
images are fitted to it in ``crab/_values/image_fit.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crab._contracts.errors import CrabError

if TYPE_CHECKING:
    from pathlib import Path

# hashlib and base64 are imported where used: the config tables import this module, and
# `crab --help` stays small (core/tests/test_chat_and_startup.py).

IMAGE_TYPES: tuple[str, ...] = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The media types crab reads, sends and stores as images (what both big providers accept)."""


def sniff_image(data: bytes) -> str | None:
    """The media type ``data`` starts like (PNG, JPEG, GIF or WebP magic bytes), else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def sha256_hex(data: bytes) -> str:
    """The content hash images and blobs are known by."""
    import hashlib

    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class ImagePart:
    """One image: its media type, its bytes and their sha256 (computed from the bytes).

    Parts are equal when type, hash and size are (whether or not the bytes are loaded).
    A part read back from JSON without its blob has ``data == b""`` (``loaded`` is False) and
    keeps the hash and size; the loop fills the bytes from the store before a provider sees it.
    Build one from bytes or a file with ``from_bytes`` / ``from_path`` (they sniff the type).
    """

    media_type: str
    data: bytes = field(default=b"", repr=False, compare=False)
    sha256: str = ""
    size: int = 0

    def __post_init__(self) -> None:
        if self.media_type not in IMAGE_TYPES:
            raise ValueError(f"{self.media_type!r} is not an image type crab keeps ({', '.join(IMAGE_TYPES)})")
        if self.data:
            digest = sha256_hex(self.data)
            if self.sha256 and self.sha256 != digest:
                raise ValueError(f"image bytes do not match sha256 {self.sha256[:12]}…")
            object.__setattr__(self, "sha256", digest)
            object.__setattr__(self, "size", len(self.data))
        elif not self.sha256:
            raise ValueError("an image part needs its bytes or their sha256")

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str | None = None) -> ImagePart:
        """An image of ``data``; its type sniffed from the magic bytes when not given.

        Raises ``ValueError`` when ``data`` is not PNG, JPEG, GIF or WebP.
        """
        kind = media_type or sniff_image(data)
        if kind not in IMAGE_TYPES:
            raise ValueError(f"not a PNG, JPEG, GIF or WebP image ({kind or 'unknown format'})")
        return cls(kind, bytes(data))

    @classmethod
    def from_path(cls, path: str | Path) -> ImagePart:
        """The image in file ``path`` (its type sniffed from the content, not the name).

        Raises ``OSError`` when the file cannot be read, ``ValueError`` when it is no image.
        """
        from pathlib import Path

        data = Path(path).read_bytes()
        if sniff_image(data) is None:
            raise ValueError(f"{path} is not a PNG, JPEG, GIF or WebP image")
        return cls.from_bytes(data)

    @property
    def loaded(self) -> bool:
        """Whether the bytes are here (not only the hash)."""
        return bool(self.data)

    def base64(self) -> str:
        """The bytes as base64 text (what provider wire formats carry)."""
        import base64

        return base64.b64encode(self.data).decode("ascii")

    def with_data(self, data: bytes) -> ImagePart:
        """This part with its bytes filled in (checked against the hash)."""
        return ImagePart(self.media_type, data, self.sha256)

    def describe(self) -> str:
        """A short label for people: ``image/png, 12.3 KB, 3fa9c1d2e4b5``."""
        return f"{self.media_type}, {human_size(self.size)}, {self.sha256[:12]}"


def human_size(size: int) -> str:
    """``size`` bytes as ``812 B``, ``12.3 KB`` or ``4.1 MB``."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


class ImageTooLarge(CrabError):
    """An image bigger than ``[crab] max_image_bytes`` even after any downscale."""

    exit_code = 2
