"""A plugin written against plugin API 1.0, before crab.AgentHandle and crab.provider_kit existed.

It uses what 1.0 offered, the way plugins were written then: ``crab.tool`` with a
``crab.ToolContext``, ``crab.ToolError``, ``crab.Command`` reaching ``ctx.agent``, a
``crab.rendering.RendererSpec`` matching event classes, and ``crab_startup``/``crab_shutdown`` reading the
agent's store and config. It keeps working, but for one change of 0.x: the handle forwards no
attribute of the ``Agent`` (``store``, ``provider``), so it reads ``store_name`` and ``provider_name``.
"""

import os

import crab

CRAB_API = ">=0.1,<0.2"


def log(line):
    with open(os.environ["CRAB_FAKE_LEGACY_LOG"], "a") as handle:
        handle.write(line + "\n")


@crab.tool
def shout(ctx: crab.ToolContext, text: str) -> str:
    """Say the text louder."""
    if not text:
        raise crab.ToolError("nothing to shout")
    return text.upper()


def whoami(ctx, args):
    agent = ctx.agent
    return f"{agent.provider_name} in store {agent.store_name}, {len(agent.tools)} tools, local={ctx.local}"


class Transcript:
    def __init__(self, target):
        self.out = target.out

    def handle(self, event):
        if isinstance(event, crab.events.TextDelta):
            self.out.write(event.text)
        elif isinstance(event, crab.events.ToolCallEvent):
            self.out.write(f"[call {event.call.name} {event.call.arguments}]")
        elif isinstance(event, crab.events.ToolResultEvent):
            self.out.write(f"[result {event.content}{' error' if event.is_error else ''}]")
        elif isinstance(event, crab.events.CommandOutput):
            self.out.write(f"[/{event.command}: {event.text}]")
        elif isinstance(event, crab.events.TurnEnded):
            self.out.write(f"[end {event.stop}]")

    def close(self):
        self.out.write("[closed]\n")


@crab.hookimpl
def crab_tools(config):
    return [shout]


@crab.hookimpl
def crab_commands(config):
    return [crab.Command("whoami", "who is answering", whoami)]


@crab.hookimpl
def crab_renderers(config):
    return [crab.rendering.RendererSpec("transcript", "everything on one line", Transcript)]


@crab.hookimpl
def crab_startup(agent):
    log(f"startup store={agent.store_name} permissions={agent.config.get('crab.permissions')}")


@crab.hookimpl
def crab_shutdown(agent):
    log(f"shutdown model={agent.model}")
