"""Choosing provider, model, store and renderer from flags and config."""

from __future__ import annotations

import types

import crab
import pytest
from crab._assembly.choosing import choose_provider, choose_renderer, choose_store
from crab._contracts.errors import ConfigError
from crab._contracts.renderers import RenderTarget
from crab.testing import ScriptedProvider, build_host, make_config


class Checked(ScriptedProvider):
    def __init__(self, name: str, models: list[str], key: bool = True) -> None:
        super().__init__([], name=name)
        self.names = models
        self.key = key

    def models(self):
        return [crab.ModelInfo(id=m, provider=self.name) for m in self.names]

    def check(self, model):
        if not self.key:
            raise ConfigError(f"{self.name}: set {self.name.upper()}_API_KEY")


def host_with(*providers, config=None):
    plugin = types.SimpleNamespace(crab_providers=crab.hookimpl(lambda config: list(providers)))
    return build_host({"p": plugin}, make_config(config))


def test_provider_slash_model_picks_both():
    host = host_with(Checked("openai", ["gpt-a", "gpt-b"]), Checked("anthropic", ["claude"]))
    provider, model = choose_provider(host, host.config, model="anthropic/claude")
    assert (provider.name, model) == ("anthropic", "claude")
    provider, model = choose_provider(host, host.config, provider="openai")
    assert (provider.name, model) == ("openai", "gpt-a")


def test_config_model_is_not_used_for_another_provider():
    config = {"crab.provider": "openai", "crab.model": "gpt-b"}
    host = host_with(Checked("openai", ["gpt-a", "gpt-b"]), Checked("anthropic", ["claude"]), config=config)
    assert choose_provider(host, host.config)[1] == "gpt-b"
    assert choose_provider(host, host.config, provider="anthropic")[1] == "claude"


def test_unclear_or_unknown_provider_and_failed_check_are_config_errors():
    two = host_with(Checked("openai", ["a"]), Checked("anthropic", ["b"]))
    with pytest.raises(ConfigError, match="choose a provider"):
        choose_provider(two, two.config)
    with pytest.raises(ConfigError, match="Did you mean: openai"):
        choose_provider(two, two.config, provider="opnai")
    none = build_host({})
    with pytest.raises(ConfigError, match="no provider plugin is loaded"):
        choose_provider(none, none.config)
    keyless = host_with(Checked("openai", ["a"], key=False))
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY"):
        choose_provider(keyless, keyless.config)


def test_store_and_renderer_choice(capsys):
    host = build_host({})
    assert choose_store(host, host.config).name == "memory"
    with pytest.raises(ConfigError, match="no store named 'jsonl'"):
        choose_store(host, host.config, "jsonl")
    import sys

    renderer = choose_renderer(host, host.config, None, RenderTarget(sys.stdout, sys.stderr))
    assert type(renderer).__name__ == "PlainRenderer"


def test_an_installed_persistent_store_is_the_default():
    from crab._builtin.memory_store import MemoryStore

    class Disk(MemoryStore):
        name = "disk"

    plugin = types.SimpleNamespace(crab_stores=crab.hookimpl(lambda config: [Disk()]))
    host = build_host({"disk-store": plugin})
    assert choose_store(host, host.config).name == "disk"
    pinned = build_host({"disk-store": plugin}, make_config({"crab.store": "memory"}))
    assert choose_store(pinned, pinned.config).name == "memory"


def test_an_installed_renderer_is_the_default_whatever_its_name():
    import io

    class Loud:
        def __init__(self, target: RenderTarget) -> None:
            self.target = target

        def handle(self, event: crab.events.Event) -> None: ...

        def close(self) -> None: ...

    def offered(name: str) -> object:
        return types.SimpleNamespace(
            crab_renderers=crab.hookimpl(
                lambda config: [crab.rendering.RendererSpec(name, "a plugin's renderer", Loud)]
            )
        )

    target = RenderTarget(io.StringIO(), io.StringIO())
    for name in ("fancy", "rich"):
        host = build_host({"fancy-plugin": offered(name)})
        assert isinstance(choose_renderer(host, host.config, None, target), Loud)
        assert type(choose_renderer(host, host.config, "plain", target)).__name__ == "PlainRenderer"
    configured = build_host({"fancy-plugin": offered("fancy")}, make_config({"crab.renderer": "jsonl"}))
    assert type(choose_renderer(configured, configured.config, None, target)).__name__ != "Loud"


def test_plain_renderer_shows_control_characters_on_a_terminal() -> None:
    import io

    from crab._builtin.render_plain import PlainRenderer
    from crab._contracts.events import TextDelta

    terminal = RenderTarget(io.StringIO(), io.StringIO(), color=True)
    PlainRenderer(terminal).handle(TextDelta("a\x1b]0;title\x07b\x1b[2Jc\r\n\td\x9b"))
    assert terminal.out.getvalue() == "a^[]0;title^Gb^[[2Jc^M\n\td\\x9b"
    piped = RenderTarget(io.StringIO(), io.StringIO(), color=False)
    PlainRenderer(piped).handle(TextDelta("raw \x1b[1m text"))
    assert piped.out.getvalue() == "raw \x1b[1m text"  # > answer.txt keeps the model's bytes


def test_an_interactive_renderer_is_the_default_of_chat_only(crab_cli):
    import io

    from crab._assembly.choosing import renderer_spec

    class Loud:
        def __init__(self, target: RenderTarget) -> None:
            self.target = target

        def handle(self, event: crab.events.Event) -> None: ...

        def close(self) -> None: ...

    plugin = types.SimpleNamespace(
        crab_renderers=crab.hookimpl(
            lambda config: [crab.rendering.RendererSpec("term", "for people", Loud, interactive=True)]
        )
    )
    host = build_host({"term-plugin": plugin})
    assert renderer_spec(host, host.config, None).name == "plain"
    assert renderer_spec(host, host.config, None, chat=True).name == "term"
    target = RenderTarget(io.StringIO(), io.StringIO())
    assert isinstance(choose_renderer(host, host.config, "term", target), Loud)
    configured = build_host({"term-plugin": plugin}, make_config({"crab.renderer": "term"}))
    assert renderer_spec(configured, configured.config, None).name == "term"


def test_an_unknown_renderer_is_one_line_with_a_suggestion(crab_run, fake_site, tmp_path):
    import json

    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [[{"text": "hi"}]]}))
    env = fake_site(["scripted"])
    base = ["run", "--plugins", "scripted", "--provider", "scripted", "-m", str(script)]
    wrong = crab_run([*base, "--renderer", "plian", "hi"], env)
    assert wrong.returncode == 2
    assert wrong.stderr.strip().splitlines() == [
        "crab: no renderer named 'plian' is loaded. Did you mean: plain? Available: jsonl, plain "
        "(see `crab plugins list`)."
    ]
    chosen = crab_run([*base, "--renderer", "plain", "hi"], env)
    assert chosen.returncode == 0 and chosen.stdout == "hi\n"
    flagged = crab_run([*base, "--output", "json", "--renderer", "plain", "hi"], env)
    assert flagged.returncode == 2 and "--renderer" in flagged.stderr


def test_plain_renderer_shows_control_characters_of_a_commands_output_on_a_terminal() -> None:
    """/todo prints the model's plan and a resume's recap its answers: neither may drive the terminal."""
    import io

    from crab._builtin.render_plain import PlainRenderer
    from crab._contracts.events import CommandOutput

    terminal = RenderTarget(io.StringIO(), io.StringIO(), color=True)
    PlainRenderer(terminal).handle(CommandOutput("todo", "[ ] step \x1b]0;PWNED\x07 \x1b[2J"))
    assert terminal.out.getvalue() == "[ ] step ^[]0;PWNED^G ^[[2J\n"
    piped = RenderTarget(io.StringIO(), io.StringIO(), color=False)
    PlainRenderer(piped).handle(CommandOutput("todo", "raw \x1b[1m"))
    assert piped.out.getvalue() == "raw \x1b[1m\n"
