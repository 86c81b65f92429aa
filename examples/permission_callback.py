"""A permission callback: the program answers when a tool wants to write, run or reach the network.

Answer "once" (this call), "always" (this kind of call for the rest of the session) or "deny".
The callback may be a plain function, as here, or an ``async def``.

Needs: crab-provider-mock (the README's Quickstart installs it).
"""

from pathlib import Path

import crab

SCRIPT = Path(__file__).parent / "scripts" / "permission_callback.json"
NOTES: dict[str, str] = {}


@crab.tool(permission="write")
def write_note(name: str, text: str) -> str:
    """Save a note under a name."""
    NOTES[name] = text
    return f"saved {name}"


def ask(request: crab.PermissionRequest) -> str:
    answer = "deny" if "secret" in request.summary else "once"
    print(f"asked to allow {request.permission}: {request.summary} -> {answer}")
    return answer


with crab.Agent(f"mock/{SCRIPT}", plugins=["provider-mock"], tools=[write_note], ask=ask) as agent:
    result = agent.run_sync("Save my shopping list and the secret note.")

for call in result.tool_calls:
    print(f"{call.arguments['name']}: {'refused' if call.is_error else call.result}")
print(f"notes kept: {sorted(NOTES)}")
print(result.text)
