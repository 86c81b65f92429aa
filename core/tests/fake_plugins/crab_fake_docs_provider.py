"""A provider written as docs/hooks.md shows it: its table declared with a default ``base_url``,
its settings read with ``config.plugin_settings`` (a provider reading a key no default fills
would fail with ``KeyError`` wherever its hook is called without the declared defaults)."""

import crab


class DocsProvider:
    name = "docs"

    def __init__(self, settings):
        self.base_url = settings["base_url"]

    def models(self):
        return [crab.ModelInfo(id="docs-model", provider="docs")]

    def check(self, model):
        return None

    async def stream(self, request):
        text = f"from {self.base_url}"
        yield crab.events.TextDelta(text)
        yield crab.events.MessageEnd(crab.messages.AssistantMessage(content=text))


@crab.hookimpl
def crab_config_table():
    return crab.ConfigTable("docs-provider", (crab.Setting("base_url", "str", "http://127.0.0.1:9", "where it is"),))


@crab.hookimpl
def crab_providers(config):
    return [DocsProvider(config.plugin_settings("docs-provider"))]
