"""Who owns which session, and the one client each session's questions go to.

A conversation is one crab session, keyed ``(http, "<token name>/<kind>:<key>")`` (a client's
key only as a digest, ``address_of``) through ``AgentHandle.session_for``, so its owner is written
in the session itself (``crab.address``) and the permission gate asks through the channel for
that address. ``Index`` lists each token's sessions for the web page
(``$CRAB_HOME/http/sessions.json``, atomic, 0600): the store has no public listing by key.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crab

MAX_LISTED = 200
"""Sessions the index keeps per token and workspace (the oldest are forgotten, not deleted)."""


@dataclass(eq=False)
class Conversation:
    """One live conversation: its session, its owner, and the client streaming its turn."""

    address: str
    owner: str
    session: crab.SessionView
    kind: str = "api"
    title: str = ""
    one_off: bool = False
    """Made for one request (OpenAI API, no conversation key): forgotten after its turn."""
    """``api`` (crab's own API: may be asked questions) or ``openai`` (never asked: refused)."""
    busy: bool = False
    client: asyncio.Queue[dict[str, Any] | None] | None = None
    """Where the running turn's events and questions go; None once its client has left."""
    asks: dict[str, asyncio.Future[str]] = field(default_factory=dict)
    """Open permission questions, by request id."""
    questions: dict[str, tuple[crab.Question, asyncio.Future[str | None]]] = field(default_factory=dict)
    """Open tool questions (``ctx.question``: crab-plan's approval), by request id."""

    def deny_open_questions(self) -> None:
        for future in self.asks.values():
            if not future.done():
                future.set_result("")  # no answer: refused, the model told nobody answered
        for _question, answer in self.questions.values():
            if not answer.done():
                answer.set_result(None)  # no answer: the tool says nobody answered


def new_key() -> str:
    return secrets.token_hex(12)


def address_of(owner: str, kind: str, key: str | None) -> str:
    """The session address of ``owner``'s conversation ``key`` (None: a new one).

    A client's key is stored only as a digest: the address is session ``meta`` and part of the
    session's title (``crab sessions list``), and a client may well use a token as its key. Two
    keys never share an address (128 bits of SHA-256); the key itself is never stored."""
    if key is None:
        return f"{owner}/{kind}:{new_key()}"
    digest = hashlib.sha256(b"crab-http conversation\0" + key.encode()).hexdigest()[:32]
    return f"{owner}/{kind}:#{digest}"


def owner_of(address: str) -> str:
    return address.split("/", 1)[0]


class Index:
    """``{workspace: {owner: [{"id", "address", "title", "created"}, …]}}`` on disk."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or crab.config.crab_home() / "http" / "sessions.json"

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def add(self, workspace: str, owner: str, session_id: str, address: str, title: str) -> None:
        data = self._read()
        entries = data.setdefault(workspace, {}).setdefault(owner, [])
        entries[:] = [e for e in entries if e.get("id") != session_id]
        entries.append({"id": session_id, "address": address, "title": title, "created": round(time.time(), 3)})
        del entries[:-MAX_LISTED]
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        crab.tools.write_atomic(self.path, json.dumps(data, indent=1).encode() + b"\n")

    def list(self, workspace: str, owner: str) -> list[dict[str, Any]]:
        entries = self._read().get(workspace, {}).get(owner, [])
        return [e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]

    def find(self, workspace: str, owner: str, session_id: str) -> dict[str, Any] | None:
        for entry in self.list(workspace, owner):
            if entry["id"] == session_id:
                return entry
        return None
