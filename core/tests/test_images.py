"""Images end to end in core: the part type, its JSON form, blobs stored once, the loop's request
path (live, resumed, tool results), redaction and the size cap."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import crab
import pytest
from crab.testing import AgentHarness, make_png

PNG = make_png(2, 2)


class _ImageTool:
    def __init__(self, data: bytes, count: int = 1) -> None:
        self.data, self.count = data, count

    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        data, count = self.data, self.count

        @crab.tool
        def snapshot() -> crab.ToolResult:
            """Take a snapshot."""
            return crab.ToolResult("the snapshot", images=(crab.messages.ImagePart.from_bytes(data),) * count)

        return [snapshot]


def test_a_part_sniffs_its_type_and_hashes_its_bytes(tmp_path: Path) -> None:
    part = crab.messages.ImagePart.from_bytes(PNG)
    assert (part.media_type, part.size, part.loaded) == ("image/png", len(PNG), True)
    import hashlib

    assert part.sha256 == hashlib.sha256(PNG).hexdigest()
    named_wrong = tmp_path / "photo.txt"
    named_wrong.write_bytes(PNG)
    assert crab.messages.ImagePart.from_path(named_wrong) == part
    fake = tmp_path / "fake.png"
    fake.write_text("not an image at all")
    with pytest.raises(ValueError, match="not a PNG, JPEG, GIF or WebP"):
        crab.messages.ImagePart.from_path(fake)
    with pytest.raises(ValueError):
        crab.messages.ImagePart("image/svg+xml", b"<svg/>")
    assert crab.messages.sniff_image(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert crab.messages.sniff_image(b"GIF89a...") == "image/gif"
    assert crab.messages.sniff_image(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert crab.messages.sniff_image(b"%PDF-1.7") is None


def test_json_names_the_image_by_hash_and_old_messages_load_unchanged() -> None:
    part = crab.messages.ImagePart.from_bytes(PNG)
    message = crab.messages.UserMessage("look", images=(part,))
    data = crab.messages.message_to_dict(message)
    assert data["images"] == [{"media_type": "image/png", "sha256": part.sha256, "size": len(PNG)}]
    assert "base64" not in json.dumps(data) and len(json.dumps(data)) < 200
    back = crab.messages.message_from_dict(data)
    assert isinstance(back, crab.messages.UserMessage)
    assert back == message and not back.images[0].loaded  # equal by hash; the bytes are the store's
    inline = crab.messages.message_from_dict(crab.messages.message_to_dict(message, inline_images=True))
    assert isinstance(inline, crab.messages.UserMessage) and inline.images[0].data == PNG
    old = {"v": 1, "role": "user", "content": "from before images"}
    assert crab.messages.message_from_dict(old) == crab.messages.UserMessage("from before images")
    assert crab.messages.message_to_dict(crab.messages.UserMessage("plain")) == {
        "v": 1,
        "role": "user",
        "content": "plain",
    }
    tool = crab.messages.message_from_dict({"v": 1, "role": "tool", "call_id": "c", "name": "n", "content": "x"})
    assert isinstance(tool, crab.messages.ToolResultMessage) and tool.images == ()


def test_an_attached_image_reaches_the_provider_and_is_stored_once() -> None:
    harness = AgentHarness([[{"text": "a red square"}], [{"text": "still red"}]])
    try:
        image = crab.messages.ImagePart.from_bytes(PNG)
        harness.run("what is this?", images=[image])
        harness.run("and again?", images=[crab.messages.ImagePart.from_bytes(PNG)])
        first = harness.requests[0].messages[-1]
        assert isinstance(first, crab.messages.UserMessage) and first.images[0].data == PNG
        entries = harness.run_async(harness.store.entries(harness.session.id))
        refs = [e.payload["images"] for e in entries if e.payload.get("images")]
        assert len(refs) == 2 and refs[0] == refs[1]
        assert harness.store._blobs == {image.sha256: PNG}  # type: ignore[attr-defined]
    finally:
        harness.close()


def test_a_resumed_session_sends_the_image_bytes_again() -> None:
    harness = AgentHarness([[{"text": "seen"}], [{"text": "remembered"}]])
    try:
        harness.run("look", images=[crab.messages.ImagePart.from_bytes(PNG)])
        resumed = harness.run_async(harness.agent.resume(harness.session.id))
        assert not resumed.messages[0].images[0].loaded
        harness.run_async(harness.agent.handle_input(resumed, "what was it?"))
        sent = harness.requests[-1].messages[0]
        assert isinstance(sent, crab.messages.UserMessage) and sent.images[0].data == PNG
    finally:
        harness.close()


def test_an_image_the_store_lost_becomes_a_note_not_an_empty_image() -> None:
    harness = AgentHarness([[{"text": "seen"}], [{"text": "ok"}]])
    try:
        harness.run("look", images=[crab.messages.ImagePart.from_bytes(PNG)])
        harness.store._blobs.clear()  # type: ignore[attr-defined]
        resumed = harness.run_async(harness.agent.resume(harness.session.id))
        harness.run_async(harness.agent.handle_input(resumed, "again"))
        sent = harness.requests[-1].messages[0]
        assert isinstance(sent, crab.messages.UserMessage) and sent.images == ()
        assert "is missing from the session store" in sent.content
    finally:
        harness.close()


def test_a_tool_result_image_goes_to_the_model() -> None:
    replies = [[{"tool": "snapshot", "args": {}}], [{"text": "I see it"}]]
    harness = AgentHarness(replies, plugins={"cam": _ImageTool(PNG)})
    try:
        harness.run("snap")
        result = harness.requests[1].messages[-1]
        assert isinstance(result, crab.messages.ToolResultMessage)
        assert result.content == "the snapshot" and result.images[0].data == PNG
        stored = [e for e in harness.run_async(harness.store.entries(harness.session.id)) if e.type == "tool_result"]
        assert stored[0].payload["images"][0]["sha256"] == result.images[0].sha256
    finally:
        harness.close()


def test_a_tool_image_over_the_cap_is_left_out_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)  # no Pillow: nothing can downscale it
    big = make_png(64, 64, noise=True)
    replies = [[{"tool": "snapshot", "args": {}}], [{"text": "ok"}]]
    harness = AgentHarness(replies, plugins={"cam": _ImageTool(big)}, config={"crab.max_image_bytes": 4096})
    try:
        harness.run("snap")
        result = harness.requests[1].messages[-1]
        assert isinstance(result, crab.messages.ToolResultMessage) and result.images == ()
        assert "[image left out: image is 12.1 KB, over the cap of 4.0 KB" in result.content
    finally:
        harness.close()


def test_a_tool_result_carries_twenty_images_at_most() -> None:
    # Each image stays in the session and goes with every later request.
    replies = [[{"tool": "snapshot", "args": {}}], [{"text": "ok"}]]
    harness = AgentHarness(replies, plugins={"cam": _ImageTool(PNG, count=100)})
    try:
        harness.run("snap")
        result = harness.requests[1].messages[-1]
        assert isinstance(result, crab.messages.ToolResultMessage) and len(result.images) == 20
        assert result.content.endswith("[80 more images left out: at most 20 per result]")
    finally:
        harness.close()


def test_an_attached_image_over_the_cap_is_one_line_and_records_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)
    harness = AgentHarness([[{"text": "never"}]], config={"crab.max_image_bytes": 4096})
    try:
        with pytest.raises(crab.messages.ImageTooLarge) as caught:
            harness.run("look", images=[crab.messages.ImagePart.from_bytes(make_png(64, 64, noise=True))])
        assert "\n" not in str(caught.value) and "raise [crab] max_image_bytes" in str(caught.value)
        assert "pip install Pillow" in str(caught.value)
        assert caught.value.exit_code == 2
        assert harness.run_async(harness.store.entries(harness.session.id)) == []
    finally:
        harness.close()


def test_pillow_downscales_to_the_longest_side_and_under_the_cap() -> None:
    image_module = pytest.importorskip("PIL.Image")
    big = crab.messages.ImagePart.from_bytes(make_png(300, 200, noise=True))
    from crab._values.image_fit import fit_image

    fitted = fit_image(big, max_bytes=20_000, max_side=128)
    assert fitted.media_type == "image/png" and fitted.size <= 20_000
    import io

    with image_module.open(io.BytesIO(fitted.data)) as opened:
        assert max(opened.size) <= 128
    small = crab.messages.ImagePart.from_bytes(PNG)
    assert fit_image(small, 20_000, 128) is small


class _NoBlobs:
    """A store without the blob capability: the loop inlines the image (and redaction keeps it)."""

    name = "noblobs"

    def __init__(self) -> None:
        from crab._builtin.memory_store import MemoryStore

        self.inner = MemoryStore()

    def __getattr__(self, name: str) -> Any:
        if name in ("put_blob", "get_blob"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_redaction_masks_text_but_never_touches_image_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    import base64

    hidden = b"ABCDEFGHIJKLMNOPQRSTUVWX"
    secret = base64.b64encode(hidden).decode()  # the key appears in the image's base64 text
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    data = PNG + b"\0" * (-len(PNG) % 3) + hidden
    assert secret in base64.b64encode(data).decode()
    store = _NoBlobs()
    assert not isinstance(store, crab.storage.BlobStore)
    harness = AgentHarness([[{"text": "ok"}]], store=store)  # type: ignore[arg-type]
    try:
        harness.run(f"my key is {secret}", images=[crab.messages.ImagePart.from_bytes(data, "image/png")])
        entry = harness.run_async(store.entries(harness.session.id))[0]
        assert secret not in entry.payload["content"]
        back = crab.messages.message_from_dict(dict(entry.payload))
        assert isinstance(back, crab.messages.UserMessage) and back.images[0].data == data
    finally:
        harness.close()


def test_images_do_not_go_with_a_command() -> None:
    harness = AgentHarness([])
    try:
        with pytest.raises(crab.UsageError, match="not with a /command"):
            harness.run("/help", images=[crab.messages.ImagePart.from_bytes(PNG)])
    finally:
        harness.close()


def test_a_function_tool_may_return_an_image_part() -> None:
    @crab.tool
    def grab() -> crab.messages.ImagePart:
        """Grab."""
        return crab.messages.ImagePart.from_bytes(PNG)

    result = asyncio.run(crab.tools.run_tool(grab, {}, crab.ToolContext("s", Path("."))))
    assert result.images[0].data == PNG and result.content.startswith("(image: image/png")


def test_compaction_summary_names_images() -> None:
    from crab._values.compaction_text import transcript_blocks

    blocks = transcript_blocks([crab.messages.UserMessage("see", images=(crab.messages.ImagePart.from_bytes(PNG),))])
    assert "[image: image/png" in blocks[0]
