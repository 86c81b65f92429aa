"""crab as a library with images (docs/library.md): bytes, paths and ImageParts go with a run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import crab
import pytest
from crab.testing import ScriptedProvider, make_png

QUIET = {"user_config": False, "project_config": False, "environment": False}
PNG = make_png(3, 2)


def _sent(provider: ScriptedProvider) -> list[tuple[str, bytes]]:
    message = provider.requests[0].messages[-1]
    assert isinstance(message, crab.messages.UserMessage)
    return [(image.media_type, image.data) for image in message.images]


def test_run_sync_takes_bytes_a_path_and_an_image_part(crab_home: Path, tmp_path: Path):
    (tmp_path / "shot").write_bytes(PNG)  # no extension: the bytes say what it is
    gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
    provider = ScriptedProvider([[{"text": "three pictures"}]])
    with crab.Agent(provider=provider, plugins=[], **QUIET) as agent:
        result = agent.run_sync(
            "what are these?", images=[PNG, tmp_path / "shot", crab.messages.ImagePart.from_bytes(gif)]
        )
    assert result.ok and result.text == "three pictures"
    assert _sent(provider) == [("image/png", PNG), ("image/png", PNG), ("image/gif", gif)]


def test_async_run_stream_takes_a_path_string(crab_home: Path, tmp_path: Path):
    (tmp_path / "pic.png").write_bytes(PNG)
    provider = ScriptedProvider([[{"text": "one"}]])

    async def main() -> crab.RunResult:
        async with crab.Agent(provider=provider, plugins=[], **QUIET) as agent:
            run = agent.run_stream("look", images=[str(tmp_path / "pic.png")])
            return await run.result()

    assert asyncio.run(main()).ok
    assert _sent(provider) == [("image/png", PNG)]


def test_a_bad_image_input_is_a_usage_error_naming_it(crab_home: Path, tmp_path: Path):
    with crab.Agent(provider=ScriptedProvider([]), plugins=[], **QUIET) as agent:
        with pytest.raises(crab.UsageError, match=r"cannot use image 11 bytes: not a PNG"):
            agent.run_sync("look", images=[b"hello world"])
        with pytest.raises(crab.UsageError, match=r"cannot use image .*missing\.png"):
            agent.run_sync("look", images=[tmp_path / "missing.png"])
