"""``crab_prompt_submit`` refuses a prompt or adds context; ``crab_turn_end`` keeps a turn going.

Both are core hooks (API 1.5) that crab-hooks runs Claude Code's ``UserPromptSubmit`` and ``Stop``
hooks on; their failure policies are the dispatcher's (``HOOKS``).
"""

from __future__ import annotations

import asyncio

import crab
from crab._contracts.events import ErrorEvent
from crab._contracts.messages import UserMessage
from crab.testing import AgentHarness


def _texts(harness: AgentHarness) -> list[str]:
    return [m.content for m in harness.session.messages if isinstance(m, UserMessage)]


class _Gate:
    def __init__(self) -> None:
        self.seen: list[str] = []

    @crab.hookimpl
    def crab_prompt_submit(self, prompt: str) -> object:
        self.seen.append(prompt)
        if "secret" in prompt:
            return crab.hooks.Deny("no secrets, please")
        return "context: the branch is main"


def test_a_refused_prompt_is_never_recorded_nor_sent():
    gate = _Gate()
    harness = AgentHarness([[{"text": "fine"}]], plugins={"gate": gate})
    try:
        outcome = harness.run("here is a secret")
        assert outcome.stop == "error"
        assert outcome.error == "prompt refused: no secrets, please"
        assert harness.requests == []
        assert _texts(harness) == []
        assert [e.message for e in harness.events_of(ErrorEvent)] == ["prompt refused: no secrets, please"]
        entries = harness.run_async(harness.store.entries(harness.session.id))
        assert all("secret" not in str(e.payload) for e in entries)
        outcome = harness.run("hello")  # the next prompt goes, with the context after it
        assert (outcome.stop, outcome.text) == ("end", "fine")
        assert _texts(harness) == ["hello", "context: the branch is main"]
        sent = [m.content for m in harness.requests[0].messages if isinstance(m, UserMessage)]
        assert sent == ["hello", "context: the branch is main"]
        assert gate.seen == ["here is a secret", "hello"]
    finally:
        harness.close()


def test_a_raising_prompt_hook_refuses_the_prompt():
    class Broken:
        @crab.hookimpl
        async def crab_prompt_submit(self, prompt: str) -> None:
            raise RuntimeError("checker down")

    harness = AgentHarness([[{"text": "fine"}]], plugins={"broken": Broken()})
    try:
        outcome = harness.run("hello")
        assert outcome.stop == "error"
        assert "crab_prompt_submit raised RuntimeError: checker down" in (outcome.error or "")
        assert harness.requests == []
    finally:
        harness.close()


def test_a_refused_steering_input_gets_its_own_outcome_and_the_turn_goes_on():
    started = asyncio.Event()

    class SlowTool:
        @crab.hookimpl
        def crab_tools(self) -> list[crab.Tool]:
            @crab.tool
            async def wait_a_bit() -> str:
                """Wait until the test steers."""
                started.set()
                await asyncio.sleep(0.2)
                return "waited"

            return [wait_a_bit]

    replies = [[{"tool": "wait_a_bit", "args": {}}], [{"text": "done"}]]
    harness = AgentHarness(replies, plugins={"gate": _Gate(), "slow": SlowTool()})

    async def scenario() -> tuple[object, object]:
        turn = asyncio.create_task(harness.agent.handle_input(harness.session, "start"))
        await asyncio.wait_for(started.wait(), 30)
        steered = await harness.agent.handle_input(harness.session, "a secret", steer=True)
        return await turn, steered

    try:
        turn, steered = harness.run_async(scenario())
        assert steered.stop == "error" and steered.error == "prompt refused: no secrets, please"
        assert turn.stop == "end" and turn.text == "done"
        assert "a secret" not in _texts(harness)
    finally:
        harness.close()


class _Reviewer:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    @crab.hookimpl
    async def crab_turn_end(self, text: str, continued: int) -> str | None:
        self.calls.append((text, continued))
        return "run the tests before you stop" if continued == 0 else None


def test_a_turn_end_hook_keeps_the_turn_going_once():
    reviewer = _Reviewer()
    harness = AgentHarness([[{"text": "first"}], [{"text": "tests pass"}]], plugins={"reviewer": reviewer})
    try:
        outcome = harness.run("fix it")
        assert (outcome.stop, outcome.text) == ("end", "tests pass")
        assert reviewer.calls == [("first", 0), ("tests pass", 1)]
        assert _texts(harness) == ["fix it", "run the tests before you stop"]
        assert len(harness.requests) == 2
    finally:
        harness.close()


def test_a_turn_end_hook_that_never_lets_go_is_bounded_by_the_iteration_cap():
    class Nag:
        @crab.hookimpl
        def crab_turn_end(self) -> str:
            return "again"

    harness = AgentHarness(
        lambda request: [{"text": "answer"}], plugins={"nag": Nag()}, config={"crab.max_iterations": 3}
    )
    try:
        outcome = harness.run("go")
        assert outcome.stop == "max_iterations"
        assert len(harness.requests) == 4  # the cap, then one last tool-less answer
    finally:
        harness.close()


def test_a_raising_turn_end_hook_is_dropped_and_the_turn_ends():
    class Broken:
        @crab.hookimpl
        def crab_turn_end(self) -> None:
            raise RuntimeError("oops")

    harness = AgentHarness([[{"text": "a"}], [{"text": "b"}]], plugins={"broken": Broken()})
    try:
        assert harness.run("one").text == "a"
        assert harness.run("two").text == "b"
        lines = [f.line for f in harness.host.failures]
        dropped = "(its crab_turn_end is not called again in this run)"
        assert lines == [f"plugin broken failed: crab_turn_end raised RuntimeError: oops {dropped}"]
    finally:
        harness.close()


def test_prompt_context_may_carry_images_and_the_hook_gets_the_agents_config():
    from crab.testing import make_png

    small, big = make_png(2, 2), make_png(300, 300, noise=True)
    seen: list[object] = []

    class Attacher:
        @crab.hookimpl
        def crab_prompt_submit(self, prompt: str, config: object) -> object:
            seen.append(config)
            images = (crab.messages.ImagePart.from_bytes(small), crab.messages.ImagePart.from_bytes(big))
            return UserMessage("the pictures", images=images)

    harness = AgentHarness([[{"text": "seen"}]], plugins={"att": Attacher()}, config={"crab.max_image_bytes": 4096})
    try:
        assert harness.run("look").text == "seen"
        assert seen == [harness.config]
        (_prompt, context) = [m for m in harness.requests[0].messages if isinstance(m, UserMessage)]
        assert context.content.startswith("the pictures")
        assert context.images[0].data == small
        # The big one is downscaled under the cap where Pillow is importable, else left out with a note.
        assert all(image.size <= 4096 for image in context.images)
        assert len(context.images) == 2 or "[image left out:" in context.content
    finally:
        harness.close()
