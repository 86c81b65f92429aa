"""Text that always leaves crab as valid UTF-8 (``valid_text``, ``json_text``) and hashes that never
fail on it (``hash_bytes``)."""

from __future__ import annotations

import json
import re
from typing import Any

# Text inside crab may hold lone surrogates (a model's "\udcff" escape, a file name decoded with
# surrogateescape): they must reach the tool that asked for them intact, but never crash a hash or
# leave crab as invalid UTF-8, hence hash_bytes, valid_text and json_text.


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so it always encodes as UTF-8."""
    if text.isascii():  # most text, every event field walked: one pass in C, no regex search
        return text
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def json_text(value: Any, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """``value`` as JSON text that is valid UTF-8: the one serialiser for JSON leaving crab."""
    return valid_text(json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys))


def hash_bytes(text: str) -> bytes:
    """``text`` as bytes for hashing: UTF-8, with lone surrogates passed through (never raises)."""
    return text.encode("utf-8", "surrogatepass")
