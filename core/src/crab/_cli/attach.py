"""Images the user attaches: ``crab run --attach FILE`` and ``@pic.png`` tokens in a chat line.

A token is ``@path`` (or ``@"path with spaces"``) standing alone; it attaches the file when the
file is a PNG, JPEG, GIF or WebP image (by its magic bytes). A token that names an image by its
extension but cannot be attached is an error the user sees; any other ``@word`` is plain text,
and so is ``@name:scheme:…`` (``@server:uri``), which a ``crab_prompt_submit`` plugin may resolve.
The token stays in the text, so the model knows which file each image is. The user is told what
was attached with a notice.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from crab._contracts.errors import CrabError, UsageError
from crab._contracts.images import ImagePart, sniff_image

if TYPE_CHECKING:
    from crab._loop.agent import Agent
    from crab._loop.session import Session, TurnOutcome

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
_TOKEN = re.compile(r'(?<!\S)@(?:"([^"]+)"|(\S+))')
_URI_REFERENCE = re.compile(r"[A-Za-z0-9][\w.-]*:[A-Za-z][A-Za-z0-9+.-]*:")
"""``name:scheme:`` — a reference to something a plugin offers (an MCP server's resource), no file."""


READ_LIMIT = 50 * 1024 * 1024
"""Bytes of a file read to attach it (the image cap then applies to what was read)."""


def load_image(path: str | Path, base: Path) -> ImagePart:
    """The image file ``path`` (relative to ``base``, ``~`` expanded); a ``UsageError`` saying why not.

    Only a regular file is read (a FIFO named ``logo.png`` would block crab for ever, a device
    never end), and at most ``READ_LIMIT`` bytes of it."""
    resolved = (base / Path(path).expanduser()).resolve()
    try:
        fd = os.open(resolved, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError
            if not stat.S_ISREG(info.st_mode):
                raise UsageError(f"cannot attach {path}: it is not a regular file")
            if info.st_size > READ_LIMIT:
                raise UsageError(f"cannot attach {path}: {info.st_size:,} bytes is more than {READ_LIMIT:,}")
            head = handle.read(16)
            if sniff_image(head) is None:
                raise UsageError(f"cannot attach {path}: it is not a PNG, JPEG, GIF or WebP image")
            data = head + handle.read(READ_LIMIT + 1 - len(head))
            if len(data) > READ_LIMIT:
                raise UsageError(f"cannot attach {path}: it grew past {READ_LIMIT:,} bytes while it was read")
    except FileNotFoundError:
        raise UsageError(f"cannot attach {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"cannot attach {path}: it is a folder") from None
    except OSError as exc:
        raise UsageError(f"cannot attach {path}: {exc.strerror or exc}") from None
    return ImagePart.from_bytes(data)


@dataclass
class Attached:
    """What one chat line attaches: images and their labels, or the error that stops it."""

    images: list[ImagePart] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    error: str | None = None


def find_attachments(line: str, base: Path) -> Attached:
    """The images ``@path`` tokens of ``line`` name (see the module docstring)."""
    found = Attached()
    seen: set[Path] = set()
    for match in _TOKEN.finditer(line):
        token = match.group(1) or match.group(2).rstrip(",;:!?)")
        if match.group(2) and _URI_REFERENCE.match(token):
            continue
        path = (base / Path(token).expanduser()).resolve()
        if path in seen:
            continue
        named_image = path.suffix.lower() in IMAGE_SUFFIXES
        if not named_image and not path.is_file():
            continue  # an @mention or an e-mail address, not a file
        try:
            image = load_image(token, base)
        except UsageError as exc:
            if named_image:
                found.error = str(exc)
                return found
            continue
        seen.add(path)
        found.images.append(image)
        found.labels.append(f"{token} ({image.describe()})")
    return found


async def send_line(agent: Agent, session: Session, line: str, *, steer: bool = False) -> TurnOutcome:
    """``agent.handle_input`` for one chat line, with the images its ``@path`` tokens attach.

    The user is told what was attached (a notice); a token that cannot be attached, or an image
    over ``[crab] max_image_bytes``, is a warning and nothing is sent.
    """
    from crab._loop.session import TurnOutcome
    from crab._values.router import route

    if route(line).kind != "model":
        return await agent.handle_input(session, line, steer=steer)
    attached = find_attachments(line, session.workspace)
    try:
        if attached.error is not None:
            raise UsageError(attached.error)
        images = [agent.context.settings.images.fit(image) for image in attached.images]
    except CrabError as exc:
        agent.notice(f"{exc} (nothing was sent)", "warning")
        return TurnOutcome(stop="command", error=str(exc), session_id=session.id)
    if images:
        agent.notice(f"attached {', '.join(attached.labels)}")
    return await agent.handle_input(session, line, steer=steer, images=images)
