"""What crab reads of one Telegram message: its address, its text (the caption of a photo or a
document), the files attached, and whether it is meant for this bot at all.

In a group, a message is meant for the bot when it mentions the bot's @username, replies to one
of the bot's messages, or is a command (``/cmd``, ``/cmd@ThisBot``) — unless ``group_mode`` is
``"all"``. A command addressed to another bot (``/help@OtherBot``) is never for this one, in any
chat. Attachments are kept with their file id and metadata (``Attachment``): photos and image
documents are fetched and handed on as images (``crab_telegram.images``); of any other file the
model is told in one line what was attached.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from telegram import Message, User

GROUP_TYPES = ("group", "supergroup")


@dataclass(frozen=True, slots=True)
class Attachment:
    """A photo or document a user sent: what Telegram's ``getFile`` needs to fetch it, and what
    is known of it without fetching."""

    kind: str
    file_id: str
    file_unique_id: str
    file_name: str | None = None
    mime_type: str | None = None
    file_size: int | None = None
    width: int | None = None
    height: int | None = None

    def describe(self) -> str:
        """One line for the model: what was attached that it cannot see (a file that is no image)."""
        facts = [self.file_name, self.mime_type] if self.kind == "document" else []
        if self.width and self.height:
            facts.append(f"{self.width}×{self.height}")
        if self.file_size:
            facts.append(f"{max(1, round(self.file_size / 1024))} KB")
        shown = ", ".join(f for f in facts if f)
        return f"[{self.kind} attached{': ' + shown if shown else ''} — crab cannot show you its content yet]"


@dataclass(frozen=True, slots=True)
class Incoming:
    """One message as the channel handles it."""

    address: str
    chat_id: int
    thread: int | None
    message_id: int
    sender_id: int | None
    text: str
    attachments: tuple[Attachment, ...]
    for_us: bool

    @property
    def prompt(self) -> str:
        """The text handed to crab: the message's text or caption, then a line per attachment."""
        return "\n".join([t for t in [self.text] if t] + [a.describe() for a in self.attachments])


def address_of(chat_id: int, thread: int | None, is_topic: bool) -> str:
    """A chat's address: its id, or ``id:topic`` for a forum topic."""
    return f"{chat_id}:{thread}" if is_topic and isinstance(thread, int) else str(chat_id)


def parse_address(address: str) -> tuple[int, int | None]:
    """``"42"`` → (42, None); ``"-100:7"`` → (-100, 7); ``ValueError`` for anything else."""
    chat, _, thread = address.partition(":")
    return int(chat), (int(thread) if thread else None)


def command_target(text: str) -> str | None:
    """The bot a command names: ``/help@SomeBot x`` → ``"SomeBot"``; None for ``/help`` or text."""
    if not text.startswith("/"):
        return None
    head = text.split(maxsplit=1)[0] if text.strip() else text
    _, at, bot = head.partition("@")
    return bot if at else None


def command_text(text: str) -> str:
    """``/cmd@MyBot args`` (a group's form) → ``/cmd args``."""
    if not text.startswith("/"):
        return text
    # the command is the text up to the first whitespace of any kind (a newline often ends it)
    return re.sub(r"\A(/[^\s@]*)@\S*", r"\1", text)


def attachments_of(message: Message) -> tuple[Attachment, ...]:
    found: list[Attachment] = []
    if message.photo:
        biggest = max(message.photo, key=lambda p: (p.width * p.height, p.file_size or 0))
        found.append(
            Attachment(
                "photo",
                biggest.file_id,
                biggest.file_unique_id,
                file_size=biggest.file_size,
                width=biggest.width,
                height=biggest.height,
            )
        )
    if message.document is not None:
        doc = message.document
        found.append(
            Attachment(
                "document",
                doc.file_id,
                doc.file_unique_id,
                file_name=doc.file_name,
                mime_type=doc.mime_type,
                file_size=doc.file_size,
            )
        )
    return tuple(found)


def _mentions(message: Message, me: User) -> bool:
    username = (me.username or "").lower()
    for entity, value in {**message.parse_entities(), **message.parse_caption_entities()}.items():
        if entity.type == "mention" and username and value.lower() == f"@{username}":
            return True
        if entity.type == "text_mention" and entity.user is not None and entity.user.id == me.id:
            return True
    return False


def _replies_to_me(message: Message, me: User) -> bool:
    replied = message.reply_to_message
    if replied is None or replied.from_user is None or replied.from_user.id != me.id:
        return False
    # in a forum topic every message "replies" to the topic's first message: that is no reply
    return not (message.is_topic_message and replied.message_id == message.message_thread_id)


def read_message(message: Message, me: User, group_mode: str = "mention") -> Incoming:
    """``message`` as crab handles it; ``me`` is the bot (``getMe``)."""
    raw = message.text if message.text is not None else (message.caption or "")
    text = raw.strip()
    target = command_target(text)
    for_us = target is None or target.lower() == (me.username or "").lower()
    if for_us and message.chat.type in GROUP_TYPES and group_mode == "mention":
        for_us = text.startswith("/") or _mentions(message, me) or _replies_to_me(message, me)
    if me.username and not text.startswith("/"):
        text = re.sub(rf"(?i)(?<!\w)@{re.escape(me.username)}\b", "", text).strip()
    thread = message.message_thread_id
    return Incoming(
        address=address_of(message.chat.id, thread, bool(message.is_topic_message)),
        chat_id=message.chat.id,
        thread=thread if message.is_topic_message else None,
        message_id=message.message_id,
        sender_id=message.from_user.id if message.from_user is not None else None,
        text=text,
        attachments=attachments_of(message),
        for_us=for_us,
    )
