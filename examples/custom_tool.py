"""A custom tool: a plain typed Python function, passed in; no plugin package needed.

Its type hints are the schema the model sees, its docstring the description.

Needs: crab-provider-mock (the README's Quickstart installs it).
"""

from pathlib import Path

import crab

SCRIPT = Path(__file__).parent / "scripts" / "custom_tool.json"


def word_count(text: str) -> int:
    """Count the words in a text.

    Args:
        text: the text whose words to count
    """
    return len(text.split())


with crab.Agent(f"mock/{SCRIPT}", plugins=["provider-mock"], tools=[word_count]) as agent:
    result = agent.run_sync("How many words are in 'the quick brown fox'?")

for call in result.tool_calls:
    print(f"{call.name}({call.arguments}) -> {call.result}")
print(result.text)
