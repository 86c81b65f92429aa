"""``[plugins.telegram]``: the declared keys, and the typed view the channel reads.

The token is not a key: it comes from the variable ``token_env`` names (``TELEGRAM_BOT_TOKEN``)
or from ``"telegram"`` in ``$CRAB_HOME/auth.json``. Everything that decides who may talk to the
agent, where the token is sent, or what a chat may run is trust-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import crab

DEFAULT_BASE_URL = "https://api.telegram.org"
TOKEN_ENV = "TELEGRAM_BOT_TOKEN"
AUTH_NAME = "telegram"

TABLE = crab.ConfigTable(
    "telegram",
    (
        crab.Setting(
            "allow_from",
            "list[str]",
            [],
            'numeric Telegram user or chat ids allowed to use the bot, as strings; empty: nobody; "*": anyone',
            trust_only=True,
        ),
        crab.Setting("token_env", "str", TOKEN_ENV, "environment variable holding the bot token", trust_only=True),
        crab.Setting(
            "base_url",
            "str",
            DEFAULT_BASE_URL,
            "Bot API server (a local telegram-bot-api, a test server)",
            trust_only=True,
        ),
        crab.Setting(
            "permission_prompts",
            "str",
            "buttons",
            "write and exec tool calls: ask the chat with inline buttons, or refuse them",
            choices=("refuse", "buttons"),
            trust_order=("refuse", "buttons"),
        ),
        crab.Setting(
            "group_mode",
            "str",
            "mention",
            "in groups, answer only messages that mention the bot, reply to it or are commands; or all",
            choices=("mention", "all"),
            trust_order=("mention", "all"),
        ),
        crab.Setting(
            "permission_answer",
            "str",
            "asker",
            "who may press a permission button in a group: the user whose message asked, or anyone allowed in the chat",
            choices=("asker", "chat"),
            trust_order=("asker", "chat"),
        ),
        crab.Setting("allow_shell", "bool", False, "let allowed chats run `!command` shell input", trust_only=True),
        crab.Setting(
            "ask_timeout",
            "float",
            300.0,
            "seconds a permission question (or a tool's question) waits for an answer",
            above=0,
        ),
        crab.Setting("poll_timeout", "int", 30, "seconds one long poll (getUpdates) waits for updates", minimum=0),
        crab.Setting("stream", "bool", True, "show a long answer as it is written, by editing one message"),
        crab.Setting(
            "edit_interval",
            "float",
            1.0,
            "seconds between edits of a streamed message (Telegram limits edits)",
            minimum=1,
        ),
        crab.Setting("request_timeout", "float", 30.0, "seconds one Bot API call may take (plus the poll)", above=0),
    ),
    doc="the Telegram channel (`crab serve telegram`)",
)


@dataclass(frozen=True)
class TelegramSettings:
    """The validated ``[plugins.telegram]`` values the channel uses."""

    allow_from: tuple[str, ...] = ()
    token_env: str = TOKEN_ENV
    base_url: str = DEFAULT_BASE_URL
    permission_prompts: str = "buttons"
    group_mode: str = "mention"
    permission_answer: str = "asker"
    allow_shell: bool = False
    ask_timeout: float = 300.0
    poll_timeout: int = 30
    stream: bool = True
    edit_interval: float = 1.0
    request_timeout: float = 30.0

    @classmethod
    def from_table(cls, raw: Mapping[str, Any] | None) -> TelegramSettings:
        values = crab.config.validate_table(TABLE, raw)
        return cls(
            allow_from=tuple(str(v).strip() for v in values["allow_from"]),
            token_env=values["token_env"],
            base_url=str(values["base_url"]).rstrip("/"),
            permission_prompts=values["permission_prompts"],
            group_mode=values["group_mode"],
            permission_answer=values["permission_answer"],
            allow_shell=values["allow_shell"],
            ask_timeout=values["ask_timeout"],
            poll_timeout=values["poll_timeout"],
            stream=values["stream"],
            edit_interval=values["edit_interval"],
            request_timeout=values["request_timeout"],
        )
