"""Streaming events: the typed events a renderer gets, as they happen, then the run's result.

The model (a mock script) calls crab-tools-basic's real ``ls`` on this folder.

Needs: crab-provider-mock and crab-tools-basic (the README's Quickstart installs both).
"""

import asyncio
from pathlib import Path

import crab

HERE = Path(__file__).parent
SCRIPT = HERE / "scripts" / "streaming.json"


async def main() -> None:
    async with crab.Agent(f"mock/{SCRIPT}", plugins=["provider-mock", "tools-basic"], workspace=HERE) as agent:
        run = agent.run_stream("What is in this folder?")
        async for event in run:
            if isinstance(event, crab.events.TextDelta):
                print(event.text, end="", flush=True)
            elif isinstance(event, crab.events.ToolCallEvent):
                print(f"\n[calling {event.call.name} {event.call.arguments}]")
            elif isinstance(event, crab.events.ToolResultEvent):
                print(f"[{event.name} answered: {len(event.content.splitlines())} lines]")
        result = await run.result()
    print(f"\n{len(result.tool_calls)} tool call, stop: {result.stop}")


asyncio.run(main())
