"""The dispatcher: every hook has a failure policy, and each policy does what docs/hooks.md says."""

from __future__ import annotations

import inspect
import types
from pathlib import Path

import crab
import pytest
from crab._contracts.errors import PluginError
from crab._contracts.events import NoticeEvent, ToolResultEvent
from crab._host import hookspecs
from crab._host.api_version import api_problem
from crab._host.declared import declared_hooks
from crab._host.dispatch import Failure
from crab.testing import build_host

ROOT = Path(__file__).resolve().parents[2]
SPECS = [name for name, value in vars(hookspecs).items() if name.startswith("crab_") and inspect.isfunction(value)]
FAILURE_WORDS = {"fail-plugin": ("**failed**",), "drop": ("**dropped**",), "refuse": ("**refused**", "**withheld**")}
"""What docs/hooks.md's table says for each policy (a row may say more)."""


def _failure_rows() -> dict[str, tuple[str, str]]:
    """Hook → (kind, what a failure costs) from the table in docs/hooks.md#when-a-hook-fails."""
    table = (ROOT / "docs" / "hooks.md").read_text().split("## When a hook fails", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[str, str]] = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`crab_"):
            for name in cells[0].replace("`", "").split(", "):
                rows[name] = (cells[1], cells[2])
    return rows


def test_every_hook_carries_its_policy_on_its_spec_and_the_docs_table_says_it():
    policies = dict(declared_hooks(hookspecs))
    rows = _failure_rows()
    assert set(policies) == set(SPECS)
    assert set(rows) == set(SPECS)  # one row per core hook, none for a hook that is gone
    for name in SPECS:
        policy = policies[name]
        kind, cost = rows[name]
        assert kind == policy.category, name
        assert any(word in cost for word in FAILURE_WORDS[policy.on_failure]), (name, cost)
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert policy.awaitable == ("may be awaitable" in doc.lower()), name


def test_the_dispatcher_takes_every_policy_from_the_specs():
    host = build_host({})
    assert host.dispatch.policies == dict(declared_hooks(hookspecs))
    assert host.declarers == dict.fromkeys(SPECS, "core")


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        (">=1.0,<2", None),
        (2, 'CRAB_API must be a version range string such as ">=0.1,<0.2", not int 2; quote it in the plugin'),
        ("<1.0", "was written for crab plugin API <1.0 and this crab-core provides 1.0: upgrade the plugin"),
        ("==0.9", "was written for crab plugin API ==0.9"),
        (">=2.0,<3", "needs crab plugin API >=2.0,<3 but this crab-core provides 1.0: upgrade crab-core"),
        (">1.0", "needs crab plugin API >1.0 but this crab-core provides 1.0: upgrade crab-core"),
        ("!=1.0", "CRAB_API !=1.0 excludes this crab-core's plugin API 1.0"),
        ("soon", "CRAB_API: cannot read version range 'soon'"),
    ],
)
def test_api_ranges_say_which_side_to_change(wanted, expected):
    problem = api_problem(wanted, "1.0")
    if expected is None:
        assert problem is None
    else:
        assert problem is not None and problem.startswith(expected), problem


def test_a_registration_failure_unregisters_everything_the_plugin_offered():
    def tools(config):
        raise ValueError("no tools today")

    plugin = types.SimpleNamespace(
        crab_tools=crab.hookimpl(tools),
        crab_commands=crab.hookimpl(lambda config: [crab.Command("mine", "mine", lambda ctx, args: "x")]),
    )
    host = build_host({"p": plugin})
    assert "mine" not in host.registry("commands")
    assert host.records["p"].status == "failed"
    assert [f.line for f in host.failures] == ["plugin p failed: crab_tools raised ValueError: no tools today"]


def test_a_plugin_added_after_the_registries_were_built_is_collected():
    host = build_host({})
    assert "echo" not in host.registry("tools")

    @crab.tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    host.load_objects({"late": types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [echo]))})
    assert host.registry("tools")["echo"].plugin == "late"


def test_wrong_return_types_are_failures_with_their_policy(crab_agent):
    @crab.tool
    def noop() -> str:
        """Nothing."""
        return "ok"

    hooks = types.SimpleNamespace(
        crab_tools=crab.hookimpl(lambda config: [noop]),
        crab_system_prompt=crab.hookimpl(lambda workspace, session_id, config: 42),
        crab_before_tool_call=crab.hookimpl(lambda call, tool, ctx: "yes"),
    )
    h = crab_agent([[{"tool": "noop", "args": {}}], [{"text": "k"}]], plugins={"odd": hooks})
    assert h.run("go").stop == "end"
    refused = (
        "plugin odd failed: crab_before_tool_call returned str, expected a Decision or None (the call was refused)"
    )
    assert [e.content for e in h.events_of(ToolResultEvent)] == [f"Refused: {refused}"]
    assert [e.message for e in h.events_of(NoticeEvent)] == [
        "plugin odd failed: crab_system_prompt returned int, expected str, a list of str or None "
        "(its crab_system_prompt is not called again in this run)",
        refused,
    ]
    assert h.host.records["odd"].status == "loaded"


class _Hasty:
    """``async def`` implementations of hooks whose spec is not marked awaitable (nobody awaits them)."""

    @crab.hookimpl
    async def crab_system_prompt(self) -> str:
        return "never seen"

    @crab.hookimpl
    async def crab_event(self) -> None:
        return None


def test_an_async_implementation_of_a_plain_hook_meets_that_hooks_policy():
    host = build_host({"hasty": _Hasty()}, builtins=False)
    assert host.dispatch.system_prompt(workspace=Path("."), session_id="s", config=host.config) == []
    host.dispatch.observe("crab_event", event=NoticeEvent("hi"), session_id="s")
    host.dispatch.observe("crab_event", event=NoticeEvent("again"), session_id="s")  # dropped: not called
    assert [f.line for f in host.failures] == [
        f"plugin hasty failed: {hook} returned an awaitable; it must be a plain function "
        f"(its {hook} is not called again in this run)"
        for hook in ("crab_system_prompt", "crab_event")
    ]
    assert host.records["hasty"].status == "loaded"


def test_an_async_registration_hook_fails_its_plugin():
    class Late:
        @crab.hookimpl
        async def crab_tools(self) -> list[crab.Tool]:
            return []

    host = build_host({"late": Late()}, builtins=False)
    host.registry("tools")
    assert [f.line for f in host.failures] == [
        "plugin late failed: crab_tools returned an awaitable; it must be a plain function"
    ]
    assert host.records["late"].status == "failed"


def test_each_failure_is_delivered_once_to_each_subscriber():
    host = build_host({})
    seen: list[str] = []
    host.dispatch.report(Failure("a", "broke"))
    host.dispatch.subscribe(lambda failure: seen.append(failure.line))
    host.dispatch.report(Failure("a", "broke"))
    host.dispatch.report(Failure("b", "broke too"))
    assert seen == ["plugin a failed: broke", "plugin b failed: broke too"]


def test_strict_mode_raises_the_same_line():
    host = build_host({})
    host.dispatch.strict = True
    with pytest.raises(PluginError, match=r"^plugin a failed: broke$"):
        host.dispatch.report(Failure("a", "broke"))


class _Terse:
    """A plugin whose hooks take fewer arguments than their specs pass (pluggy allows any subset)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        @crab.tool
        def terse() -> str:
            """Say little."""
            return "ok"

        return [terse]

    @crab.hookimpl
    def crab_system_prompt(self, session_id: str) -> str:
        return f"session {session_id}"

    @crab.hookimpl
    def crab_event(self, event: crab.events.Event) -> None:
        self.seen.append(type(event).__name__)

    @crab.hookimpl
    def crab_before_tool_call(self, call: crab.messages.ToolCall) -> crab.hooks.Decision | None:
        self.seen.append(f"call {call.name}")
        return None


def test_an_implementation_may_take_any_subset_of_the_specs_arguments(crab_agent):
    plugin = _Terse()
    harness = crab_agent([[{"tool": "terse", "args": {}}], [{"text": "done"}]], plugins={"terse": plugin})
    assert "terse" in harness.host.registry("tools")  # def crab_tools(self): no config needed
    outcome = harness.run("go")
    assert outcome.text == "done", harness.events
    assert harness.host.failures == []
    assert "call terse" in plugin.seen and "TurnEnded" in plugin.seen
    parts = harness.host.dispatch.system_prompt(workspace=Path("."), session_id="s1", config=harness.config)
    assert parts[-1] == "session s1"  # after core's own part


def test_an_argument_with_a_default_is_passed_when_the_spec_has_it(crab_agent):
    got: list[object] = []

    @crab.hookimpl
    def crab_tools(config: crab.Config | None = None, unknown: int = 3) -> list[crab.Tool]:
        got.append((config, unknown))
        return []

    host = build_host({"defaults": types.SimpleNamespace(crab_tools=crab_tools)})
    host.registry("tools")
    assert got == [(host.config, 3)]  # config given by the call, unknown left at its default


def test_an_argument_the_hook_does_not_pass_is_refused_at_registration():
    @crab.hookimpl
    def crab_tools(config: crab.Config, workspace: Path) -> list[crab.Tool]:
        return []

    host = build_host({"greedy": types.SimpleNamespace(crab_tools=crab_tools)})
    record = host.records["greedy"]
    assert (record.status, record.reason) == ("failed", "its crab_tools takes workspace, which the hook does not pass")


def test_a_class_given_for_an_instance_is_told_to_pass_an_instance():
    """An entry point naming a class gets an instance; an in-process plugin (the harness's
    ``plugins=``, ``crab.Agent(plugin_objects=)``) is registered as given, so a class whose hooks
    take ``self`` fails, and the line says what to pass instead."""

    class Shaped:
        CRAB_API = ">=0.1,<0.2"

        @crab.hookimpl
        def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
            return []

    host = build_host({"shaped": Shaped})
    record = host.records["shaped"]
    assert record.status == "failed"
    assert (
        record.reason
        == "its crab_tools takes self, which the hook does not pass (a class was given: pass an instance of it)"
    )
    assert build_host({"shaped": Shaped()}).records["shaped"].status == "loaded"


def test_a_plugin_failing_for_a_missing_kit_says_which_kit_to_install():
    from crab._host.dispatch import describe

    missing = ModuleNotFoundError("No module named 'crab_provider_kit'", name="crab_provider_kit")
    assert describe(missing) == (
        "ModuleNotFoundError: No module named 'crab_provider_kit' "
        "(the kit crab-provider-kit is not installed: pip install crab-provider-kit)"
    )
    assert describe(ModuleNotFoundError("No module named 'httpx'", name="httpx")) == (
        "ModuleNotFoundError: No module named 'httpx'"
    )


def test_observers_are_called_in_crabs_order_and_past_one_that_raises():
    """What pluggy's own call (``pm.hook.crab_event(...)``) does not do, and why the dispatcher
    calls each implementation itself: load order (pluggy calls the last registered first) and
    every observer called although one before it raised (pluggy stops at the first exception)."""
    seen: list[str] = []

    def observer(name: str, *, fails: bool = False, **marks: bool) -> object:
        def crab_event(event: crab.events.Event) -> None:
            seen.append(name)
            if fails:
                raise RuntimeError("observer bug")

        return types.SimpleNamespace(crab_event=crab.hookimpl(**marks)(crab_event))

    plugins = {
        "a": observer("a"),
        "b": observer("b", tryfirst=True),
        "c": observer("c", fails=True),
        "d": observer("d", trylast=True),
        "e": observer("e"),
    }
    host = build_host(plugins, builtins=False)
    host.dispatch.observe("crab_event", event=NoticeEvent("one"), session_id="s")
    host.dispatch.observe("crab_event", event=NoticeEvent("two"), session_id="s")
    assert seen == ["b", "a", "c", "e", "d", "b", "a", "e", "d"]  # c dropped after its failure
    assert [f.line for f in host.failures] == [
        "plugin c failed: crab_event raised RuntimeError: observer bug (its crab_event is not called again in this run)"
    ]
