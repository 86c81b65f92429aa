"""``@server:uri`` in a user's prompt: that MCP resource goes to the model with it, as context.

A reference is ``@NAME:URI`` standing alone, where ``URI`` starts with a scheme
(``@everything:demo://resource/static/document/architecture.md``); any other ``@word`` and an
e-mail address stay plain text. Only servers of this run (the user's config or a trusted
project's: ``servers`` is trust-only) are read, and from a channel's message (Telegram, HTTP, a
scheduled job) only those configured ``permission = "read"``: elsewhere a read takes the gate.
Text is masked (the server's ``${VAR}`` values and every secret crab knows), cut at
``MAX_TEXT`` characters and fenced as the server's content; a PNG, JPEG, GIF or WebP blob
becomes an image of the message (``MAX_IMAGES`` at most); other binary content a note with its
type and size. An unknown server or a failed read refuses the prompt with one line: nothing
reaches the model. Where the server offers subscriptions the resource is subscribed to for the
session, like one the model read (``crab_mcp.subscriptions``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crab import ToolContext
from crab.hooks import Deny
from crab.messages import ImagePart, UserMessage

if TYPE_CHECKING:
    from crab import Config

    from crab_mcp.manager import Manager
    from crab_mcp.server import ServerLink

MAX_TEXT = 20_000
"""Characters of one attached resource's text the model gets (then a note says how to read on)."""
MAX_REFERENCES = 10
"""Resources one prompt may attach."""
MAX_IMAGES = 20
"""Images one prompt attaches (each already within ``max_image_bytes``); a server's resource may
hold any number, which would all go to the model and stay in the session."""
SKIPPED = "(MCP prompt "
"""The first line crab puts before a server's prompt text (``crab_mcp.prompts``): server-written
text, so its ``@`` words are never read as the user's references."""

_REFERENCE = re.compile(r"(?<!\S)@([A-Za-z0-9][\w.-]*):([A-Za-z][A-Za-z0-9+.-]*:\S+)")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
_TRAILING = ".,;:!?)\"'"


@dataclass(frozen=True)
class Reference:
    """One ``@server:uri`` of a prompt."""

    server: str
    uri: str

    @property
    def token(self) -> str:
        return f"@{self.server}:{self.uri}"


def references(prompt: str) -> list[Reference]:
    """The ``@server:uri`` references of ``prompt``, in order, each once (trailing punctuation
    of the sentence is not part of the URI)."""
    found: list[Reference] = []
    for match in _REFERENCE.finditer(prompt):
        uri = match.group(2).rstrip(_TRAILING)
        if not _URI.fullmatch(uri):
            continue  # only punctuation after the scheme
        ref = Reference(match.group(1), uri)
        if ref not in found:
            found.append(ref)
    return found


async def attach(
    manager: Manager, prompt: str, session_id: str, workspace: Path, config: Config
) -> Deny | UserMessage | None:
    """The context ``prompt``'s references give, a ``Deny`` saying what is wrong, or None
    (no reference)."""
    if prompt.startswith(SKIPPED):
        return None
    refs = references(prompt)
    if not refs:
        return None
    if len(refs) > MAX_REFERENCES:
        return Deny(f"{len(refs)} MCP resources in one message is more than {MAX_REFERENCES}; attach fewer")
    from crab.secrets import Redactor, known_secrets

    redact = Redactor(known_secrets(config)).text
    blocks: list[str] = []
    images: list[ImagePart] = []
    labels: list[str] = []
    read_from: list[tuple[ServerLink, str]] = []
    channel = await _channel(manager, session_id)
    for ref in refs:
        link = manager.links.get(ref.server)
        if link is None:
            names = ", ".join(sorted(manager.links)) or "none"
            return Deny(
                f"cannot attach {ref.token}: crab runs no MCP server {ref.server!r} (servers: {names}); "
                "`crab mcp list` shows every configured server and why"
            )
        if channel is not None and link.config.permission != "read":
            return Deny(
                f"cannot attach {ref.token} from a {channel} message: MCP server {ref.server!r} is not "
                'configured permission = "read", so reading it takes the permission gate; ask the model '
                "to read it (mcp_read_resource), or set that server's permission in your own config"
            )
        read = await _read(link, ref, redact)
        if isinstance(read, Deny):
            return read
        text, found = read
        blocks.append(redact(_fenced(link, ref, text)))
        images.extend(found)
        labels.append(f"{ref.token} ({len(text):,} characters{f', {len(found)} image(s)' if found else ''})")
        read_from.append((link, ref.uri))
    if len(images) > MAX_IMAGES:
        blocks.append(f"[{len(images) - MAX_IMAGES} more images left out: one message attaches at most {MAX_IMAGES}]")
        images = images[:MAX_IMAGES]
    # Only once every read worked: a refused prompt leaves no subscription behind for the model.
    ctx = ToolContext(session_id=session_id, workspace=workspace, config=config, emit=manager.emit)
    for link, uri in read_from:
        await manager.watch.after_read(link, uri, ctx)
    manager.notice(f"attached {', '.join(labels)}")
    return UserMessage("\n\n".join(blocks), images=tuple(images))


async def _channel(manager: Manager, session_id: str) -> str | None:
    """The channel a session's prompts come through (``crab.channel`` in its meta: Telegram, HTTP,
    a scheduled job), None for the terminal's. A chat message may not grant what a tool call
    would need the permission gate for."""
    from crab import StoreError

    if manager.session_info is None:
        return None
    try:
        meta = (await manager.session_info(session_id)).meta
    except StoreError:
        return "unknown"  # a session crab cannot place is not taken for the terminal's
    channel = meta.get("crab.channel")
    return channel if isinstance(channel, str) and channel else None


async def _read(link: ServerLink, ref: Reference, redact: Callable[[str], str]) -> Deny | tuple[str, list[ImagePart]]:
    """The resource's text (blobs as notes), masked, and its images, or why it cannot be attached."""
    from crab import ToolResult

    from crab_mcp.manager import mask
    from crab_mcp.resources import offers
    from crab_mcp.server import CallFailed, ServerDown

    where = f"cannot attach {ref.token}: MCP server {link.name!r}"
    if link.status == "ready" and not offers(link):
        return Deny(f"{where} offers no resources")
    try:
        result = await link.request(f"resources/read {ref.uri}", "read_resource", ref.uri)
    except ServerDown as exc:
        return Deny(f"{where} is not available: {exc}")
    except CallFailed as exc:
        return Deny(f"{where} {exc}")
    parts: list[str] = []
    images: list[ImagePart] = []
    for item in result.contents:
        text = getattr(item, "text", None)
        if isinstance(text, str):
            parts.append(text)
            continue
        image = _image(item)
        if image is not None:
            images.append(image)
            parts.append(f"[image {image.describe()}: {item.uri}]")
        else:
            size = len(str(getattr(item, "blob", "") or "").rstrip("=")) * 3 // 4  # base64's length, decoded
            parts.append(f"[resource {item.uri} ({item.mime_type or 'binary'}), {size:,} bytes, not shown]")
    # Masked whole, then cut: a secret the cut split would keep its first part unmasked.
    text = redact(mask(link, ToolResult("\n".join(parts) or "(empty resource)")).content)
    if len(text) > MAX_TEXT:
        text = f"{text[:MAX_TEXT]}\n[… cut: {len(text):,} characters; the model can read it with mcp_read_resource]"
    return text, images


def _image(item: Any) -> ImagePart | None:
    """The image a blob is, when its bytes are a PNG, JPEG, GIF or WebP image of its declared type."""
    import base64
    import binascii

    mime = str(getattr(item, "mime_type", "") or "")
    if not mime.startswith("image/"):
        return None
    try:
        image = ImagePart.from_bytes(base64.b64decode(str(getattr(item, "blob", "") or ""), validate=True))
    except (binascii.Error, ValueError):
        return None
    return image if image.media_type == mime else None


def _fenced(link: ServerLink, ref: Reference, text: str) -> str:
    from crab_mcp.fence import fence
    from crab_mcp.resources import READ

    return fence(link.name, READ, text, what=f"Resource {ref.uri}, attached by the user as {ref.token},")
