"""Fitting an image to the caps (``[crab] max_image_bytes`` and ``max_image_side``): downscaled where
Pillow is importable (never a dependency), else ``ImageTooLarge`` past the cap."""

from __future__ import annotations

from typing import Any

from crab._contracts.config import DEFAULT_MAX_IMAGE_BYTES, DEFAULT_MAX_IMAGE_SIDE
from crab._contracts.images import ImagePart, ImageTooLarge, human_size


def fit_image(
    part: ImagePart, max_bytes: int = DEFAULT_MAX_IMAGE_BYTES, max_side: int = DEFAULT_MAX_IMAGE_SIDE
) -> ImagePart:
    """``part`` within the caps: downscaled where Pillow is importable and it is too big, else as is.

    Raises ``ImageTooLarge`` (one line saying what to do) when it is still over ``max_bytes``.
    """
    scaled = _downscale(part, max_bytes, max_side)
    if scaled.size > max_bytes:
        hint = "" if _pillow() else "; pip install Pillow to let crab downscale it"
        raise ImageTooLarge(
            f"image is {human_size(scaled.size)}, over the cap of {human_size(max_bytes)}: "
            f"send a smaller one or raise [crab] max_image_bytes{hint}"
        )
    return scaled


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError:
        return None
    return Image


_PIL_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WEBP"}


def _downscale(part: ImagePart, max_bytes: int, max_side: int) -> ImagePart:
    """``part`` resized to fit ``max_side`` (and shrunk until under ``max_bytes``), or unchanged.

    Unchanged when Pillow is missing, the image is small enough, or Pillow cannot read it.
    """
    image_module = _pillow()
    if image_module is None or not part.loaded:
        return part
    import io

    try:
        with image_module.open(io.BytesIO(part.data)) as image:
            width, height = image.size
            if max(width, height) <= max_side and part.size <= max_bytes:
                return part
            side = min(max_side, max(width, height))
            for _ in range(8):  # each pass shrinks by the square root of the overshoot (or a quarter)
                copy = image.convert("RGBA" if image.mode in ("RGBA", "LA", "P") else "RGB")
                if part.media_type == "image/jpeg":
                    copy = copy.convert("RGB")
                copy.thumbnail((side, side))
                out = io.BytesIO()
                options = {"quality": 85} if part.media_type == "image/jpeg" else {}
                copy.save(out, _PIL_FORMATS[part.media_type], **options)
                data = out.getvalue()
                if len(data) <= max_bytes or side <= 64:
                    return ImagePart(part.media_type, data)
                side = max(64, int(side * min(0.75, (max_bytes / len(data)) ** 0.5)))
    except (OSError, ValueError, SyntaxError):  # Pillow could not read or write it: leave it to the cap
        return part
    return part
