"""``crab temporal run``: one turn on Temporal, shown like ``crab run`` shows one."""

from __future__ import annotations

import asyncio
import json
import sys

import crab

from crab_temporal.client import run_turn
from crab_temporal.settings import TemporalSettings


def run_command(prompt: str, session: str | None, model: str | None, plugins: list[str] | None, output: str) -> int:
    if output not in ("text", "json"):
        raise crab.UsageError(f"--output takes text or json, not {output!r}")
    agent = crab.Agent(model, plugins=plugins, renderer="plain" if output == "text" else None)
    settings = TemporalSettings.from_config(agent.config)

    async def go() -> dict[str, object]:
        async with agent:
            return await run_turn(agent, settings, prompt, session)

    result = asyncio.run(go())
    if output == "json":
        doc = {key: result.get(key) for key in ("text", "stop", "error", "session_id", "tool_calls")}
        print(json.dumps(doc, ensure_ascii=False))
    elif result.get("stop") == "error" and result.get("error") and not result.get("shown"):
        print(f"crab: error: {result['error']}", file=sys.stderr)
    return 0 if result.get("stop") not in ("error",) else 1
