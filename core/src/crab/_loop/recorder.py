"""The one writer of a session's entries: every payload redacted, image bytes put once in the store's
blobs, each step's entry written once (by its id), and the stand-in results that pair a session (and
the child sessions its open calls started) after a crash (docs/architecture.md#one-recorder)."""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from crab._contracts.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from crab._contracts.storage import EntryType, Store
from crab._loop.session import Session
from crab._secrets.redaction import Redactor
from crab._values.history import load_history
from crab._values.images import load_images, message_payload
from crab._values.message_json import message_from_dict, message_to_dict
from crab._values.model_choice import model_entry

M = TypeVar("M", bound=Message)

PARENT_SESSION_META = "crab.parent_session"
"""Session ``meta`` key: the id of the session whose tool call started this one."""
PARENT_CALL_META = "crab.parent_call"
"""Session ``meta`` key: the id of that tool call."""


class Recorder:
    """Writes the entries of the sessions of one store.

    A write that carries a step id (``crab._loop.steps``) happens once per id for a session: a
    driver that carries a step out twice (a retried activity, an abort racing a tool) records
    once; a write the store refused (it raised) is not written, and carrying it out again writes
    it. The ids are kept until ``forget`` (the end of the turn whose steps they name).
    """

    def __init__(self, store: Store, redactor: Redactor) -> None:
        self.store = store
        self.redactor = redactor
        self._written: weakref.WeakKeyDictionary[Session, set[str]] = weakref.WeakKeyDictionary()

    def written(self, session: Session, step_id: str) -> bool:
        """Whether the entry of ``step_id`` is already in the store."""
        done = self._written.get(session)
        return done is not None and step_id in done

    def _release(self, session: Session, step_id: str | None) -> None:
        """The write of ``step_id`` failed: it is not written, and carrying the step out again writes it."""
        done = self._written.get(session)
        if step_id is not None and done is not None:
            done.discard(step_id)

    def _claim(self, session: Session, step_id: str | None) -> bool:
        """True when ``step_id`` (None: no id, always written) was not written yet; marks it written."""
        if step_id is None:
            return True
        done = self._written.setdefault(session, set())
        if step_id in done:
            return False
        done.add(step_id)
        return True

    def forget(self, session: Session) -> None:
        """The turn whose step ids were kept is over."""
        self._written.pop(session, None)

    async def append(self, session: Session, type: EntryType, payload: Mapping[str, Any]) -> None:
        """Append one entry, secrets redacted (image references are hashes of binary data:
        redaction leaves them alone). After a handoff anchor (a compaction's too) the session's
        model switch is recorded again: a resume reads from the last anchor on, and must find it."""
        await self.store.append(session.id, type, self.redactor.payload(payload))
        if type == "anchor" and payload.get("kind") == "handoff" and session.model is not None:
            await self.store.append(session.id, "event", model_entry(session.model))

    async def payload(self, message: Message) -> dict[str, Any]:
        """A message's entry payload, its images' bytes put in the store's blobs first."""
        return await message_payload(self.store, message)

    async def message(self, session: Session, message: Message, step_id: str | None = None) -> bool:
        """Store ``message`` and keep it in context (as stored: ``_stored``) unless it is an
        aborted or failed reply; False when ``step_id`` was written already (then nothing happens)."""
        if not self._claim(session, step_id):
            return False
        try:
            kept = await self._stored(session, "message", message)
        except Exception:  # not a cancellation: that write may have happened (a thread finishing it)
            self._release(session, step_id)
            raise
        if not isinstance(kept, AssistantMessage) or kept.replayable:
            session.messages.append(kept)
        return True

    async def result(self, session: Session, step_id: str, message: M) -> M | None:
        """Store a tool call's result under ``step_id`` (``crab._loop.steps.result_id``) and return
        it as stored, for the context; None when it was written already. The caller puts results
        in context in call order, after the batch."""
        if not self._claim(session, step_id):
            return None
        try:
            return await self._stored(session, "tool_result", message)
        except Exception:  # as in ``message``
            self._release(session, step_id)
            raise

    async def _stored(self, session: Session, type: EntryType, message: M) -> M:
        """Append ``message``'s entry and return the message the context keeps: the one a resume
        reads back. Where a secret was masked that is the masked one, so a resumed session sends
        the very bytes the live one sent (the prefix providers cache) and the model never gets a
        secret crab knows; else ``message`` itself (no copy)."""
        payload = await self.payload(message)
        stored = self.redactor.payload(payload)
        await self.store.append(session.id, type, stored)
        if stored is payload or stored == payload:
            return message
        masked = message_from_dict(stored)
        if isinstance(message, UserMessage | ToolResultMessage) and isinstance(masked, UserMessage | ToolResultMessage):
            masked = replace(masked, images=message.images)  # image bytes are never masked: keep them loaded
        return masked  # type: ignore[return-value]  # message_from_dict gives back the same kind

    async def load_images(self, session: Session) -> None:
        """Fill the bytes of every image the session's context names only by hash (checking only
        the messages added since the last request: ``Session.images_scanned``)."""
        messages = session.messages
        scanned, count = session.images_scanned
        start = count if scanned is messages and count <= len(messages) else 0
        filled = await load_images(self.store, messages[start:], session.blobs)
        if filled is not None:
            messages = session.messages = [*messages[:start], *filled]
        session.images_scanned = (messages, len(messages))

    async def pair_after_crash(self, session_id: str, workspace: str, missing: Sequence[ToolResultMessage]) -> int:
        """Store ``missing`` (``History.missing``: the stand-ins for calls a killed process left
        without a result) and a stand-in for every call left open in the child sessions those
        calls started, and theirs in turn; returns how many results were stored."""
        for result in missing:
            await self.store.append(session_id, "tool_result", self.redactor.payload(message_to_dict(result)))
        if not missing:
            return 0
        wanted = {result.call_id for result in missing}
        repaired = len(missing)
        sessions = await self.store.list_sessions(workspace, limit=1_000_000_000)
        children = sorted(
            (info for info in sessions if (info.meta or {}).get(PARENT_SESSION_META) == session_id),
            key=lambda info: info.created,
        )
        for info in children:
            if (info.meta or {}).get(PARENT_CALL_META) not in wanted:
                continue
            history = load_history(await self.store.entries(info.id, since_handoff=True))
            repaired += await self.pair_after_crash(info.id, workspace, history.missing)
        return repaired
