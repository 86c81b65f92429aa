"""The one recorder (``crab._loop.recorder``): entries redacted, a step's entry written once by its id,
image bytes kept once in the blobs, and a killed session tree paired after a crash."""

from __future__ import annotations

import asyncio
from pathlib import Path

from crab._builtin.memory_store import MemoryStore
from crab._contracts.images import ImagePart
from crab._contracts.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from crab._loop.recorder import PARENT_CALL_META, PARENT_SESSION_META, Recorder
from crab._loop.session import Session
from crab._secrets.redaction import Redactor
from crab._values.history import STOPPED, load_history
from crab._values.message_json import message_to_dict
from crab.testing.images import make_png

SECRET = "sk-test-0123456789abcdef"


def test_a_step_recorded_twice_is_written_once(tmp_path: Path) -> None:
    async def main() -> tuple[list[str], Session]:
        store = MemoryStore()
        info = await store.create_session(str(tmp_path))
        session = Session(info=info, workspace=tmp_path)
        recorder = Recorder(store, Redactor([SECRET]))
        assert await recorder.message(session, UserMessage("hi"), "t1.1")
        assert not await recorder.message(session, UserMessage("hi"), "t1.1")  # the driver retried
        result = ToolResultMessage("c1", "read", "done")
        assert await recorder.result(session, "t1.3/c1", result)
        assert not await recorder.result(session, "t1.3/c1", result)
        assert recorder.written(session, "t1.3/c1") and not recorder.written(session, "t1.3/c2")
        recorder.forget(session)  # the turn is over: its ids are not kept
        assert not recorder.written(session, "t1.1")
        entries = await store.entries(info.id)
        return [e.type for e in entries], session

    types, session = asyncio.run(main())
    assert types == ["message", "tool_result"]
    assert session.messages == [UserMessage("hi")]  # context once too; results join it in call order


def test_every_entry_is_redacted_and_failed_replies_stay_out_of_context(tmp_path: Path) -> None:
    async def main() -> tuple[str, Session]:
        store = MemoryStore()
        info = await store.create_session(str(tmp_path))
        session = Session(info=info, workspace=tmp_path)
        recorder = Recorder(store, Redactor([SECRET]))
        await recorder.message(session, UserMessage(f"my key is {SECRET}"))
        await recorder.message(session, AssistantMessage("partial", stop_reason="aborted"))
        await recorder.result(session, "t.1/c", ToolResultMessage("c", "env", f"KEY={SECRET}"))
        return str([e.payload for e in await store.entries(info.id)]), session

    stored, session = asyncio.run(main())
    assert SECRET not in stored and "[redacted]" in stored
    assert [type(m) for m in session.messages] == [UserMessage]


def test_image_bytes_go_once_into_the_blobs_and_are_read_back(tmp_path: Path) -> None:
    png = make_png(4, 4)

    async def main() -> tuple[str, bytes | None, bytes]:
        store = MemoryStore()
        info = await store.create_session(str(tmp_path))
        session = Session(info=info, workspace=tmp_path)
        recorder = Recorder(store, Redactor([]))
        image = ImagePart.from_bytes(png)
        await recorder.message(session, UserMessage("look", images=(image,)))
        entry = (await store.entries(info.id))[0]
        resumed = Session(info=info, workspace=tmp_path, messages=load_history([entry]).messages)
        await recorder.load_images(resumed)
        filled = resumed.messages[0]
        assert isinstance(filled, UserMessage)
        return str(entry.payload), await store.get_blob(image.sha256), filled.images[0].data

    payload, blob, filled = asyncio.run(main())
    assert blob == png and filled == png
    assert "'sha256'" in payload and "data" not in payload  # named by its hash, never inlined beside blobs


def test_pairing_after_a_crash_reaches_the_children_of_the_open_calls_only(tmp_path: Path) -> None:
    async def main() -> tuple[int, list[str], list[str], list[str]]:
        store = MemoryStore()
        workspace = str(tmp_path)
        parent = await store.create_session(workspace)
        call = ToolCall("d1", "delegate", {})
        await store.append(parent.id, "message", message_to_dict(AssistantMessage("", tool_calls=(call,))))
        child = await store.create_session(workspace, meta={PARENT_SESSION_META: parent.id, PARENT_CALL_META: "d1"})
        inner = ToolCall("d2", "delegate", {})
        await store.append(child.id, "message", message_to_dict(AssistantMessage("", tool_calls=(inner,))))
        grandchild = await store.create_session(workspace, meta={PARENT_SESSION_META: child.id, PARENT_CALL_META: "d2"})
        deepest = ToolCall("e1", "echo", {})
        await store.append(grandchild.id, "message", message_to_dict(AssistantMessage("", tool_calls=(deepest,))))
        other = await store.create_session(workspace, meta={PARENT_SESSION_META: parent.id, PARENT_CALL_META: "z"})
        await store.append(other.id, "message", message_to_dict(AssistantMessage("", tool_calls=(deepest,))))
        history = load_history(await store.entries(parent.id))
        count = await Recorder(store, Redactor([])).pair_after_crash(parent.id, workspace, history.missing)

        async def results(session_id: str) -> list[str]:
            return [e.payload["content"] for e in await store.entries(session_id) if e.type == "tool_result"]

        return count, await results(child.id), await results(grandchild.id), await results(other.id)

    count, child, grandchild, other = asyncio.run(main())
    assert count == 3 and child == [STOPPED] and grandchild == [STOPPED]
    assert other == []  # a child of a call that ended is left to its own resume


def test_the_driver_carrying_a_run_tools_step_out_twice_records_each_result_once(tmp_path: Path) -> None:
    """A retried ``RunTools`` (same step id) neither stores nor shows a second result for a call."""
    from collections import deque

    from crab._contracts.events import ToolResultEvent
    from crab._loop.session import QueuedInput
    from crab._loop.steps import RunTools, ToolsRan
    from crab._loop.turn import Turn
    from crab.testing import AgentHarness

    h = AgentHarness([], workspace=tmp_path)
    try:

        async def twice() -> list[object]:
            item = QueuedInput("go")
            turn = Turn(h.agent.context, h.session, item, deque([item]))
            step = RunTools("t.3", (ToolCall("c1", "nothing", {}), ToolCall("c2", "nothing", {})))
            return [await turn.carry_out(step), await turn.carry_out(step)]

        answers = h.run_async(twice())
        entries = h.run_async(h.store.entries(h.session.id))
    finally:
        h.close()
    assert answers == [ToolsRan(), ToolsRan()]
    assert [e.payload["call_id"] for e in entries if e.type == "tool_result"] == ["c1", "c2"]
    assert [e.call_id for e in h.events_of(ToolResultEvent)] == ["c1", "c2"]
    assert [m.call_id for m in h.session.messages if isinstance(m, ToolResultMessage)] == ["c1", "c2"]
