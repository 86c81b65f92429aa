"""Red team (issue 40, second pass): a step whose write failed is not "written". The recorder kept
a step's id as written before the store took the entry, so a driver that carried the step out
again after the store failed (a retried activity, the settle that pairs an open call) recorded
nothing: the entry was lost for good and a call could be left with no result."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from crab._builtin.memory_store import MemoryStore
from crab._contracts.messages import ToolResultMessage, UserMessage
from crab._loop.recorder import Recorder
from crab._loop.session import Session
from crab._secrets.redaction import Redactor


class FailsOnce(MemoryStore):
    """A memory store whose first append fails as a full disk does."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    async def append(self, session_id: str, type: Any, payload: Mapping[str, Any]) -> Any:
        if not self.failed:
            self.failed = True
            raise OSError(28, "No space left on device")
        return await super().append(session_id, type, payload)


@pytest.mark.parametrize("kind", ["message", "tool_result"])
def test_a_step_whose_write_failed_is_written_when_carried_out_again(tmp_path: Path, kind: str) -> None:
    async def main() -> list[str]:
        store = FailsOnce()
        info = await store.create_session(str(tmp_path))
        session = Session(info=info, workspace=tmp_path)
        recorder = Recorder(store, Redactor([]))

        async def carry_out() -> object:
            if kind == "message":
                return await recorder.message(session, UserMessage("hi"), "t1.1")
            return await recorder.result(session, "t1.3/c1", ToolResultMessage("c1", "read", "done"))

        with pytest.raises(OSError):
            await carry_out()
        assert not recorder.written(session, "t1.1" if kind == "message" else "t1.3/c1")
        assert await carry_out()  # the retry writes it
        assert not await carry_out()  # and only once
        return [e.type for e in await store.entries(info.id)]

    assert asyncio.run(main()) == [kind]
