"""A renderer that says when it is closed (``crab run`` must close its renderer)."""

import crab


class Closing:
    def __init__(self, target):
        self.target = target

    def handle(self, event):
        pass

    def close(self):
        self.target.err.write("renderer closed\n")


@crab.hookimpl
def crab_renderers(config):
    return [crab.rendering.RendererSpec("closing", "says when it is closed", Closing)]
