"""Filling images named only by hash checks only the messages added since the last request, so a
long turn does not rescan its whole context on every model call (``Recorder.load_images``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import crab
import pytest
from crab._builtin.memory_store import MemoryStore
from crab._loop.session import Session
from crab._values import images
from crab.testing import make_png

PNG = make_png(2, 2)


def test_a_request_checks_only_the_new_messages(crab_agent, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    checked: list[crab.messages.Message] = []
    real = images._unloaded

    def counting(message: crab.messages.Message) -> bool:
        checked.append(message)
        return real(message)

    monkeypatch.setattr(images, "_unloaded", counting)
    agent = crab_agent([[{"text": "ok"}]]).agent
    store = MemoryStore()
    agent.store = agent.recorder.store = store

    async def main() -> Session:
        info = await store.create_session(str(tmp_path))
        await store.put_blob(PNG)
        session = Session(info=info, workspace=tmp_path)
        session.messages = [crab.messages.UserMessage(f"m{i}") for i in range(100)]
        await agent.recorder.load_images(session)
        checked.clear()
        hashed = crab.messages.message_from_dict(
            crab.messages.message_to_dict(
                crab.messages.UserMessage("pic", images=(crab.messages.ImagePart.from_bytes(PNG),))
            )
        )
        session.messages.append(hashed)
        await agent.recorder.load_images(session)
        return session

    session = asyncio.run(main())
    assert len(checked) <= 2  # the one new message (checked, then filled), not the 100 before it
    assert session.messages[-1].images[0].data == PNG  # and its bytes were filled from the store
