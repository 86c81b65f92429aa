"""A one-shot answer: build an agent, ask once, print the answer and what it cost.

Runs on crab-provider-mock (a scripted model, no API key): ``python examples/one_shot.py``.
Put a real model behind it with ``crab.Agent("openai/gpt-4.1-mini", plugins=["provider-openai"])``.

Needs: crab-provider-mock (the README's Quickstart installs it).
"""

from pathlib import Path

import crab

SCRIPT = Path(__file__).parent / "scripts" / "one_shot.json"

with crab.Agent(f"mock/{SCRIPT}", plugins=["provider-mock"]) as agent:
    result = agent.run_sync("What is crab?")

print(result.text)
print(f"stop: {result.stop}, tokens: {result.usage.input_tokens} in / {result.usage.output_tokens} out")
print(f"session: {result.session_id}")
