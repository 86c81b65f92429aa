"""The permission question is redacted before any channel shows it: the terminal prompt, the live
chat's ``ChatInput.ask`` and a remote channel's ``ask(address, request)`` under ``crab serve``
(Telegram sends it to a third party) all get a ``PermissionRequest`` with known secrets masked."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import crab
import pytest
from crab._assembly.channel_host import ChannelHost
from crab._contracts.interception import PermissionRequest
from crab.testing import AgentHarness

SECRET = "sk-demo-0123456789abcdef0123"


@crab.tool(permission="write")
def post(url: str, header: str) -> str:
    """Post to a URL."""
    return "posted"


class Tools:
    @crab.hookimpl
    def crab_tools(self, config: Any) -> list[Any]:
        return [post]


REPLIES = [[{"tool": "post", "args": {"url": "https://example.test", "header": f"Bearer {SECRET}"}}], [{"text": "ok"}]]


class Remote:
    name = "remote"
    local = False

    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    async def run(self, agent: Any) -> None:
        await asyncio.sleep(3600)

    async def ask(self, address: str, request: PermissionRequest) -> str:
        self.asked.append(request)
        return "once"


def test_the_agents_ask_gets_a_redacted_question(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_API_KEY", SECRET)
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> str:
        asked.append(request)
        return "once"

    harness = AgentHarness(REPLIES, plugins={"tools": Tools()}, workspace=tmp_path, ask=ask)  # type: ignore[arg-type]
    try:
        assert harness.run("post it").text == "ok"
        (request,) = asked
        assert SECRET not in request.summary and "example.test" in request.summary
    finally:
        harness.close()


def test_a_channels_ask_gets_a_redacted_question(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_API_KEY", SECRET)
    harness = AgentHarness(REPLIES, plugins={"tools": Tools()}, workspace=tmp_path, local=False)
    remote = Remote()
    host = ChannelHost(harness.agent, {"remote": remote})
    try:
        session = harness.run_async(host.session_for("remote", "7"))
        assert harness.run_async(harness.agent.handle_input(session, "post it")).text == "ok"
        (request,) = remote.asked
        assert SECRET not in request.summary and "example.test" in request.summary
    finally:
        harness.close()
