"""``crab telegram pair``: add the Telegram account that sends a one-time code to ``allow_from``.

The code is shown only on this terminal (the user's own word); whoever sends ``/pair CODE`` to
the bot in a private chat within the time is added to ``[plugins.telegram] allow_from`` in the
user config. Five wrong codes end the attempt. Other messages that arrive meanwhile stay
pending, for ``crab serve telegram`` to answer (or drop) at its next start.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
from pathlib import Path

import crab
from crab.secrets import lookup_key

from crab_telegram.access import describe_sender
from crab_telegram.settings import AUTH_NAME, TelegramSettings

MAX_WRONG = 5


def run_pairing(config: crab.Config, seconds: float) -> int:
    from crab_telegram.channel import missing_token_line

    try:
        settings = TelegramSettings.from_table(config.plugin_settings("telegram"))
    except crab.ConfigError as exc:
        print(f"crab: {exc}", file=sys.stderr)
        return 2
    token = lookup_key(AUTH_NAME, settings.token_env)
    if not token:
        print(f"crab: {missing_token_line(settings)}", file=sys.stderr)
        return 2
    code = f"{secrets.randbelow(10**6):06d}"
    print(f"Send this message to your bot in a private chat within {seconds / 60:g} minutes:\n\n    /pair {code}\n")
    sys.stdout.flush()
    try:
        found = asyncio.run(wait_for_code(settings, token, code, seconds, crab.secrets.known_secrets(config)))
    except KeyboardInterrupt:
        print("crab: pairing stopped; nothing changed", file=sys.stderr)
        return 130
    except crab.CrabError as exc:
        print(f"crab: {exc}", file=sys.stderr)
        return 1
    if found is None:
        print("crab: no matching code arrived; nothing changed", file=sys.stderr)
        return 1
    user_id, who = found
    try:
        path = add_to_allowlist(str(user_id))
    except crab.ConfigError as exc:
        print(f"crab: {exc}; add {user_id} to [plugins.telegram] allow_from yourself", file=sys.stderr)
        return 2
    print(f"paired {who}: it may now use the bot ([plugins.telegram] allow_from in {path})")
    return 0


def add_to_allowlist(user_id: str) -> Path:
    """Add ``user_id`` to ``allow_from`` in the user config file (not a project's), keeping its
    comments; a file that does not parse is left alone (``ConfigError``)."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    path = crab.config.crab_home() / "config.toml"
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        doc = tomlkit.parse(text)
    except (OSError, UnicodeDecodeError, ParseError) as exc:
        raise crab.ConfigError(f"cannot add you to allow_from: {path} does not parse ({exc})") from None
    plugins = doc.setdefault("plugins", tomlkit.table())
    table = plugins.setdefault("telegram", tomlkit.table()) if isinstance(plugins, dict) else None
    if not isinstance(table, dict):
        raise crab.ConfigError(f"cannot add you to allow_from: [plugins.telegram] in {path} is not a table")
    current = table.get("allow_from")
    entries = [str(e) for e in current] if isinstance(current, list) else []
    if user_id not in entries:
        entries.append(user_id)
    table["allow_from"] = entries
    path.parent.mkdir(parents=True, exist_ok=True)
    crab.tools.write_atomic(path, tomlkit.dumps(doc).encode("utf-8"))
    return path


async def wait_for_code(
    settings: TelegramSettings, token: str, code: str, seconds: float, secrets_known: list[str] | None = None
) -> tuple[int, str] | None:
    """The sender of ``/pair CODE`` in a private chat, or None. Other messages are journaled
    pending with the token and ``secrets_known`` masked, as ``crab serve telegram`` journals them."""
    from crab_telegram.api import BotApi, TelegramError
    from crab_telegram.state import UpdateState, state_path

    redactor = crab.secrets.Redactor([token, *(secrets_known or [])])
    api = BotApi(token, settings.base_url, timeout=settings.request_timeout, redact=redactor)
    state = UpdateState(state_path(token.split(":", 1)[0]))
    deadline = time.monotonic() + seconds
    wrong = 0
    try:
        try:
            await api.start()
        except TelegramError as exc:
            if exc.token_refused:
                raise crab.ConfigError(f"telegram: the Bot API refused the bot token ({exc})") from None
            raise crab.ChannelError(f"telegram: {exc}") from None
        while time.monotonic() < deadline and wrong < MAX_WRONG:
            wait = int(max(0, min(settings.poll_timeout, deadline - time.monotonic())))
            try:
                updates, skipped = await api.get_updates(
                    state.offset or None, wait, ["message", "edited_message", "callback_query"]
                )
            except TelegramError as exc:
                if exc.token_refused:
                    raise crab.ConfigError(f"telegram: the Bot API refused the bot token ({exc})") from None
                await asyncio.sleep(1.0)
                continue
            last = max([u.update_id for u in updates] + [s.update_id for s in skipped], default=None)
            by_id = {u.update_id: u for u in updates}
            for entry in state.take([u.to_dict() for u in updates], through=last):
                message = by_id[int(entry["update_id"])].message
                if message is None:
                    continue
                text = (message.text or "").strip()
                if not text.startswith("/pair"):
                    continue  # left pending for crab serve
                state.done(int(entry["update_id"]))
                sender = message.from_user.id if message.from_user is not None else None
                if message.chat.type != "private" or sender is None:
                    continue
                if secrets.compare_digest(text.split(maxsplit=1)[-1].strip(), code):
                    await api.send_message(message.chat.id, "Paired: crab will answer you here.")
                    username = message.from_user.username if message.from_user is not None else None
                    return sender, describe_sender(sender, username, message.chat.id)
                wrong += 1
        return None
    finally:
        await api.close()
