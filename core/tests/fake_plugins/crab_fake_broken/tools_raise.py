"""``crab_tools`` raises; the command and renderer it also offers must be gone with it."""

import crab


@crab.hookimpl
def crab_tools(config):
    raise ValueError("no tools today")


@crab.hookimpl
def crab_commands(config):
    return [crab.Command("brokencmd", "answer from a failed plugin", lambda ctx, args: "still here")]


class _Loud:
    def __init__(self, target):
        self.target = target

    def handle(self, event):
        self.target.err.write("the failed plugin's renderer ran\n")

    def close(self):
        pass


@crab.hookimpl
def crab_renderers(config):
    return [crab.rendering.RendererSpec("brokenrender", "a failed plugin's renderer", _Loud)]
