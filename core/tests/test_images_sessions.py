"""Images through `crab sessions`: export writes each image once, migrate copies the blobs, show
counts them."""

from __future__ import annotations

import asyncio
import base64
import json

import crab
from crab._builtin.memory_store import MemoryStore
from crab._cli.sessions import entry_summary, export_jsonl, migrate_sessions, session_blobs
from crab.testing import make_png

PNG = make_png(3, 1)
IMAGE = crab.messages.ImagePart.from_bytes(PNG)


async def _session_with_an_image_twice(store: MemoryStore) -> crab.storage.SessionInfo:
    info = await store.create_session("/w")
    await store.put_blob(PNG)
    for text in ("one", "two"):
        await store.append(
            info.id, "message", crab.messages.message_to_dict(crab.messages.UserMessage(text, images=(IMAGE,)))
        )
    return info


def test_export_writes_each_image_once_before_the_entries() -> None:
    async def main() -> list[str]:
        store = MemoryStore()
        info = await _session_with_an_image_twice(store)
        entries = await store.entries(info.id)
        return list(export_jsonl(await store.get_session(info.id), entries, await session_blobs(store, entries)))

    lines = [json.loads(line) for line in asyncio.run(main())]
    blobs = [line for line in lines if "blob" in line]
    assert blobs == [{"blob": IMAGE.sha256, "media_type": "image/png", "data": base64.b64encode(PNG).decode()}]
    assert lines.index(blobs[0]) == 1  # right after the header, before any entry that names it
    assert sum(1 for line in lines if "payload" in line) == 2


def test_migrate_copies_the_blobs_and_show_counts_images() -> None:
    async def main() -> tuple[bytes | None, str]:
        source, target = MemoryStore(), MemoryStore()
        await _session_with_an_image_twice(source)
        await migrate_sessions(source, target)
        migrated = (await target.list_sessions())[0]
        return await target.get_blob(IMAGE.sha256), entry_summary((await target.entries(migrated.id))[0])

    data, summary = asyncio.run(main())
    assert data == PNG
    assert "user [1 image]: one" in summary
