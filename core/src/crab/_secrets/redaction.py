"""Keeping secrets in: mask every key or token crab knows (``crab._secrets.keys.known_secrets``)
in what it stores (``Redactor``) and in every event it shows (``EventRedactor``)."""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from crab._contracts.events import ChildEvent, Event, TextDelta, ThinkingDelta
from crab._contracts.images import IMAGE_TYPES
from crab._secrets.keys import MIN_SECRET_LENGTH, REDACTED
from crab._values.entries import valid_blob_hash
from crab._values.utf8 import valid_text


class Redactor:
    """Masks a fixed set of secrets in strings and in nested JSON-like payloads, keys and values
    alike: what the loop appends to a store, and log files crab writes."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = sorted((s for s in secrets if len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(s) for s in self.secrets)) if self.secrets else None

    def text(self, value: str) -> str:
        if self._pattern is None or not value:
            return value
        return self._pattern.sub(REDACTED, value)

    def found(self, value: str) -> bool:
        """Whether any secret occurs in ``value``."""
        return self._pattern is not None and self._pattern.search(value) is not None

    def matches(self, value: str) -> Iterator[re.Match[str]]:
        """Where secrets occur in ``value`` (leftmost first, longest secret first at one place)."""
        return self._pattern.finditer(value) if self._pattern is not None else iter(())

    def payload(self, value: Any) -> Any:
        """A copy of ``value`` with every string (keys included) masked, except image references
        (an ``images`` list of media type, sha256, size and base64 bytes): binary data is never
        rewritten, which would corrupt it."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {
                self.text(str(k)): v if k == "images" and _image_refs(v) else self.payload(v) for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.payload(v) for v in value]
        return value


_IMAGE_KEYS = frozenset({"media_type", "sha256", "size", "data"})


def _image_refs(value: Any) -> bool:
    """Whether ``value`` is a list of image references and nothing else (``image_to_dict``)."""
    return isinstance(value, list) and all(
        isinstance(item, Mapping)
        and set(item) <= _IMAGE_KEYS
        and item.get("media_type") in IMAGE_TYPES
        and isinstance(item.get("sha256"), str)
        and valid_blob_hash(item["sha256"])
        for item in value
    )


def error_line(text: str) -> str:
    """An error line safe to print when no agent is at hand: every secret crab can find masked
    (from the config if it still loads, the environment and the auth file), valid UTF-8."""
    from crab._secrets.keys import known_secrets

    try:
        from crab._config.layers import load_config

        config = load_config()
    except Exception:  # the config itself may be what failed: mask what the rest can find
        config = None
    return valid_text(Redactor(known_secrets(config)).text(text))


class StreamRedactor:
    """Masks secrets in one stream of text pieces, even a secret split across pieces.

    ``feed`` returns what can be shown now: everything except a tail that is a proper prefix of
    a secret (and so might become one with the next piece). ``flush`` returns the held tail,
    masked, when the stream ends. Shown pieces joined equal ``Redactor.text`` of the whole text.
    """

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self._pending = ""
        self._longest = max((len(s) for s in redactor.secrets), default=0)
        self._starts = frozenset(s[0] for s in redactor.secrets)
        self._prefixes = frozenset(s[:n] for s in redactor.secrets for n in range(1, len(s)))

    def feed(self, piece: str) -> str:
        if not self._longest:
            return piece
        text = self._pending + piece if self._pending else piece
        hold = self._held_from(text)
        if hold == len(text) and not self._pending and not self.redactor.found(text):
            return piece  # the common case: nothing to mask, nothing to hold

        shown: list[str] = []
        done = 0
        for match in self.redactor.matches(text):
            if match.start() >= hold:
                break  # inside the held tail: decided when more text arrives
            if match.end() > hold:
                hold = match.end()  # a complete secret reaching into the tail is masked now
            shown.append(text[done : match.start()])
            shown.append(REDACTED)
            done = match.end()
        shown.append(text[done:hold])
        self._pending = text[hold:]
        return "".join(shown)

    def flush(self) -> str:
        """The held tail, masked; the stream starts afresh."""
        text, self._pending = self._pending, ""
        return self.redactor.text(text)

    def _held_from(self, text: str) -> int:
        """Start of the longest tail of ``text`` that is a proper prefix of some secret."""
        for start in range(max(0, len(text) - self._longest + 1), len(text)):
            if text[start] in self._starts and text[start:] in self._prefixes:
                return start
        return len(text)


_PLAIN = frozenset({int, float, bool, type(None)})
_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _field_names(kind: type) -> tuple[str, ...] | None:
    """The field names of dataclass ``kind`` (None for other types), looked up once per type:
    every delivered event is walked, so this runs for each event and each nested value."""
    try:
        return _FIELDS[kind]
    except KeyError:
        names = tuple(f.name for f in dataclasses.fields(kind)) if dataclasses.is_dataclass(kind) else None
        _FIELDS[kind] = names
        return names


class EventRedactor:
    """Makes every event safe to show: secrets masked, text valid UTF-8.

    Every string field of every event the loop delivers to renderers and ``crab_event``
    observers is masked, nested ones too (tool call arguments, messages, errors, notices, output),
    with lone surrogates replaced (``crab._values.utf8.valid_text``). Text and thinking
    arrive in deltas, and a secret split across two would pass a per-event mask, so each stream
    holds back a tail that could start a secret (``StreamRedactor``) until the next delta completes
    or clears it, or another event of that session (tool call, usage, error, turn end) flushes it.

    ``events(event, session_id)`` gives the events to deliver in its place: usually one, none
    while a delta is held back, or a flushed delta before the event that ends a stream.
    """

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self._streams: dict[tuple[str, type[Event]], StreamRedactor] = {}
        # No secret is shorter than this (no secret at all: no string is long enough to hold one).
        self._shortest = min((len(s) for s in redactor.secrets), default=sys.maxsize)

    def events(self, event: Event, session_id: str = "") -> list[Event]:
        if isinstance(event, ChildEvent):
            # The child's deltas are a stream of their own: a secret split across two of them is
            # held back and masked as the parent's are, never mixed with the parent's text.
            inner = self.events(event.event, f"{session_id}>{event.session_id}")
            labels = (self._value(event.session_id), self._value(event.label), self._value(event.call_id))
            return [ChildEvent(*labels, shown) for shown in inner]
        if isinstance(event, TextDelta | ThinkingDelta):
            out = self._flush(session_id, keep=type(event)) if self._streams else []
            shown = valid_text(self._stream(session_id, type(event)).feed(event.text))
            if shown is event.text:
                out.append(event)  # unchanged: deliver the event itself, not a copy
            elif shown:
                out.append(type(event)(shown))
            return out
        out = self._flush(session_id) if self._streams else []
        out.append(self.event(event))
        return out

    def event(self, event: Event) -> Event:
        """A copy of ``event`` with every string field, nested, masked and made valid UTF-8."""
        cleaned: Event = self._value(event)
        return cleaned

    def _stream(self, session_id: str, kind: type[Event]) -> StreamRedactor:
        key = (session_id, kind)
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = StreamRedactor(self.redactor)
        return stream

    def _flush(self, session_id: str, keep: type[Event] | None = None) -> list[Event]:
        out: list[Event] = []
        for kind in (TextDelta, ThinkingDelta):
            if kind is keep:
                continue
            stream = self._streams.pop((session_id, kind), None)
            if stream is not None:
                rest = stream.flush()
                if rest:
                    out.append(kind(valid_text(rest)))
        return out

    def _value(self, value: Any) -> Any:
        """``value`` with every string, nested, masked and made valid UTF-8 (``value`` itself when
        nothing changed). Every delivered event is walked, so the exact types events are made of
        (str, dict, list, tuple, their dataclasses) are told apart by one type lookup; anything
        else (a subclass, another ``Mapping``) takes the general checks of ``_general``, which give
        the same answer for those exact types too (``test_event_redaction``'s property test)."""
        kind = type(value)
        if kind is str:
            return self._text(value)
        if kind in _PLAIN:
            return value
        if kind is dict:
            return self._mapping(value)
        if kind is list or kind is tuple:
            return self._sequence(value)
        names = _field_names(kind)
        if names is not None:
            return self._fields(value, names)
        return self._general(value)

    def _text(self, value: str) -> str:
        # A string shorter than the shortest secret cannot hold one: no regex pass for it.
        if len(value) >= self._shortest:
            value = self.redactor.text(value)
        return value if value.isascii() else valid_text(value)

    def _mapping(self, value: Mapping[Any, Any]) -> Any:
        changed = False
        pairs = []
        for k, v in value.items():
            new_k = self._text(k) if type(k) is str else self._value(str(k))
            new_v = self._value(v)
            if new_k is not k or new_v is not v:
                changed = True
            pairs.append((new_k, new_v))
        return dict(pairs) if changed else value  # nothing to mask: keep the object (and the copy's cost)

    def _sequence(self, value: list[Any] | tuple[Any, ...]) -> Any:
        items = [self._value(v) for v in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)

    def _fields(self, value: Any, names: tuple[str, ...]) -> Any:
        changes: dict[str, Any] = {}
        for name in names:
            old = getattr(value, name)
            new = self._value(old)
            if new is not old:
                changes[name] = new
        return dataclasses.replace(value, **changes) if changes else value

    def _general(self, value: Any) -> Any:
        """The walk by ``isinstance``: what ``_value`` does for any type."""
        if isinstance(value, str):
            return valid_text(self.redactor.text(value))
        if type(value) in _PLAIN:
            return value
        if isinstance(value, Mapping):
            pairs = [(self._value(str(k)), self._value(v)) for k, v in value.items()]
            if all(k is old_k and v is old_v for (k, v), (old_k, old_v) in zip(pairs, value.items(), strict=True)):
                return value
            return dict(pairs)
        if isinstance(value, list | tuple):
            return self._sequence(value)
        names = _field_names(type(value))
        if names is not None:
            return self._fields(value, names)
        return value
