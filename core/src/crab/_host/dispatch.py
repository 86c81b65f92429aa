"""The one place crab calls plugin hooks, applying the failure policy each hookspec carries, and the
line a failure makes (docs/hooks.md, docs/architecture.md#the-dispatcher)."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from crab._contracts.errors import CrabError, PluginError
from crab._host import hookspecs
from crab._host.declared import HookPolicy, declared_hooks

if TYPE_CHECKING:
    import pluggy

    from crab._contracts.interception import Deny
    from crab._contracts.messages import ToolCall, UserMessage
    from crab._contracts.providers import ModelRequest
    from crab._contracts.tools import Tool, ToolContext, ToolResult

MAX_COMPLETIONS = 50
"""Completions one word gets from all plugins together (``crab_completions``): a menu, not a listing."""


@dataclass(frozen=True, slots=True)
class Failure:
    """One plugin failure; ``line`` is the one line every command shows for it."""

    plugin: str
    reason: str
    status: str = "failed"

    @property
    def line(self) -> str:
        return f"plugin {self.plugin} {self.status}: {self.reason}"


class ModelCallRefused(CrabError):
    """A ``crab_before_model_call`` interceptor failed, so the model call was not made."""


KITS = {"crab_provider_kit": "crab-provider-kit", "crab_sql_kit": "crab-sql-kit", "crab_jobs_kit": "crab-jobs-kit"}
"""A kit's import package → its distribution, for the line of a plugin whose kit is missing."""


def describe(exc: BaseException) -> str:
    """``ValueError: first line of the message`` (one line, whatever the exception says)."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        kit = KITS.get(exc.name.partition(".")[0])
        if kit is not None and kit not in line:  # a plugin whose kit is missing: say what to install
            line += f" (the kit {kit} is not installed: pip install {kit})"
    return line


def wrong_type(hook: str, value: object, expected: str) -> str:
    return f"{hook} returned {type(value).__name__}, expected {expected}"


def _is_pair(item: Any) -> bool:
    return isinstance(item, tuple | list) and len(item) == 2 and all(isinstance(part, str) for part in item)


def _discard(value: Any) -> None:
    if inspect.iscoroutine(value):
        value.close()  # never awaited on purpose: the hook may not be async


Listener = Callable[[Failure], None]
Implementation = tuple[str, "pluggy.HookImpl"]
Invoke = Callable[[Mapping[str, Any]], Any]


def _invoker(impl: pluggy.HookImpl) -> Invoke:
    """A call of ``impl`` given the hook's keyword arguments, passing only those it names (its
    ``argnames``, and its ``kwargnames`` that are there: pluggy 1.7's ``_multicall`` rule). Made
    once per implementation, not worked out again at every call as ``_multicall`` does: observers
    and interceptors run for every event and every tool call (``bench/dispatch.py``: a no-op
    ``crab_event`` in 20 plugins 6.79 µs a call worked out each time, 2.61 µs made once)."""
    function, names, optional = impl.function, tuple(impl.argnames), tuple(impl.kwargnames)
    if optional:
        return lambda kwargs: function(*[kwargs[n] for n in names], **{n: kwargs[n] for n in optional if n in kwargs})
    if not names:
        return lambda kwargs: function()
    if len(names) == 1:
        (name,) = names
        return lambda kwargs: function(kwargs[name])
    if len(names) == 2:
        first, second = names
        return lambda kwargs: function(kwargs[first], kwargs[second])
    return lambda kwargs: function(*[kwargs[n] for n in names])


class Dispatcher:
    """Calls hooks plugin by plugin in load order and applies the failure policy each hook's spec
    carries (``policies``, read from the ``crab.hookspec`` marks).

    ``order`` is the plugins' load order (only plugins in it are called); ``fail_plugin`` marks a
    plugin failed and unregisters it, ``fault`` records a lost hook on a plugin that stays loaded
    (the host does both, then reports through ``report``). An implementation may accept any
    subset of its spec's arguments, as pluggy promises: each is passed only the arguments it names
    (``def crab_tools(self)`` gets no ``config``). Each failure is one ``Failure`` whose ``line``
    every command shows once; with ``CRAB_STRICT_PLUGINS=1`` (``strict``) it raises ``PluginError``.
    """

    def __init__(
        self,
        pm: pluggy.PluginManager,
        order: dict[str, int],
        fail_plugin: Callable[[str, str], None],
        fault: Callable[[str, str], None],
        *,
        strict: bool,
    ) -> None:
        self.pm = pm
        self.order = order
        self.fail_plugin = fail_plugin
        self.fault = fault
        self.strict = strict
        self.failures: list[Failure] = []
        self._listeners: list[Listener] = []
        self._reported: set[str] = set()
        self._callers: dict[str, list[tuple[str, Invoke]]] = {}
        self._dropped: set[tuple[str, str]] = set()
        self._refused: set[tuple[str, str]] = set()
        self._closed: dict[str, Failure] = {}  # interceptor hook → failure of a plugin that had one
        self.policies: dict[str, HookPolicy] = dict(declared_hooks(hookspecs))
        """Every declared hook's policy, read from its mark: core's, then those the loaded plugins declare."""
        self.core: set[str] = set()
        """Core's built-in plugins: their ``tryfirst`` implementations run before every other
        plugin's, their ``trylast`` ones after (the permission gate must see the final arguments:
        a plugin's ``trylast`` Replace ran after the user approved other ones)."""

    # --- failures -------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Get every failure so far, then each new one as it happens; returns an unsubscribe."""
        past = list(self.failures)
        self._listeners.append(listener)  # first, so failures met while replaying are delivered too
        for failure in past:
            listener(failure)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def report(self, failure: Failure) -> None:
        """Record ``failure`` once and tell the listeners; in strict mode raise ``PluginError``."""
        if failure.line in self._reported:
            return
        self._reported.add(failure.line)
        self.failures.append(failure)
        if self.strict:  # the one line is the error itself; no warning before it
            raise PluginError(failure.line)
        for listener in list(self._listeners):
            listener(failure)

    def plugin_failed(self, plugin: str, failure: Failure, hooks: Iterable[str]) -> None:
        """The host unregistered ``plugin``: its interceptors now refuse, then the failure is reported."""
        for hook in hooks:
            policy = self.policies.get(hook)
            if policy is not None and policy.on_failure == "refuse" and hook not in self._closed:
                self._closed[hook] = failure
        self.invalidate()
        self.report(failure)

    def _fail(self, plugin: str, hook: str, reason: str) -> Failure:
        """Apply ``hook``'s policy to a failing implementation of ``plugin``."""
        policy = self.policies[hook].on_failure
        if policy == "fail-plugin":
            self.fail_plugin(plugin, reason)
            return Failure(plugin, reason)
        if policy == "drop":
            self._dropped.add((plugin, hook))
            self._callers.pop(hook, None)
            reason = f"{reason} (its {hook} is not called again in this run)"
        else:
            reason = f"{reason} (the call was refused)"
            if (plugin, hook) in self._refused:  # each call says why; the report is made once
                return Failure(plugin, reason)
            self._refused.add((plugin, hook))
        self.fault(plugin, reason)
        return Failure(plugin, reason)

    # --- implementations ------------------------------------------------------------------

    def invalidate(self) -> None:
        self._callers.clear()

    def implementations(self, hook: str) -> list[Implementation]:
        """Each live implementation of ``hook`` in call order: pluggy's ``get_hookimpls`` for the
        plugins in ``order`` that did not lose this hook, sorted by crab's rule (core's ``tryfirst``,
        then the plugins' ``tryfirst``, the rest, the plugins' ``trylast``, core's ``trylast``; load
        order within each), where pluggy calls the last registered first."""
        caller = getattr(self.pm.hook, hook, None)
        impls = [
            i
            for i in (caller.get_hookimpls() if caller is not None else [])
            if i.plugin_name in self.order and (i.plugin_name, hook) not in self._dropped
        ]

        def key(impl: pluggy.HookImpl) -> tuple[int, int]:
            core = impl.plugin_name in self.core
            tier = (0 if core else 1) if impl.tryfirst else (4 if core else 3) if impl.trylast else 2
            return tier, self.order[impl.plugin_name]

        return [(i.plugin_name, i) for i in sorted(impls, key=key)]

    def _each(self, hook: str, kwargs: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
        """(plugin, value) from each implementation of ``hook`` in turn; one that raised gives
        (plugin, ``Failure``) once its policy is applied. ``kwargs`` is read as each is called (an
        interceptor's caller puts the previous one's answer in it); leaving the loop stops it.

        The one place crab calls implementations one by one rather than through pluggy's
        ``HookCaller`` (``pm.hook.<name>(**kwargs)``, i.e. ``_multicall``), which runs them all in
        one ``try``: at the first exception it stops, drops the results gathered so far and does not
        say which implementation raised, while every policy here needs that one implementation failed
        and the others called (``drop``, ``fail-plugin``: an observer must not miss an event because
        another one raised) or the checked call refused in its name (``refuse``). pluggy also calls
        the last-registered plugin first (crab: load order, core's ``tryfirst``/``trylast``
        outermost), leaves ``async`` implementations unawaited and cannot hand one interceptor's
        result to the next. Wrapping each implementation once in a ``try`` (so pluggy's loop goes on
        past a failure) keeps isolation but none of the rest, and costs more than this loop
        (``bench/dispatch.py``, CPU per call, median of 5 × 5,000, loaded 2-core machine; crab /
        pluggy / pluggy with guarded implementations): a no-op ``crab_event(event)`` (an argument
        subset) in 1 plugin 0.39 / 1.29 / 1.38 µs, in 20 plugins 2.88 / 6.12 / 7.67 µs; 20 plugins
        installed and none implementing it 0.28 / 0.98 / 0.96 µs; 20 no-op ``crab_before_tool_call``
        9.2 µs (awaiting and chaining included) / 8.0 / 8.8 µs (neither). What pluggy does do is
        used as it is: its markers, its registration checks, ``get_hookimpls`` (``implementations``)
        and each ``HookImpl``'s ``argnames``/``kwargnames``, passed by pluggy 1.7's own
        ``_multicall`` rule (``_invoker``, made once per implementation).
        """
        awaitable = self.policies[hook].awaitable
        callers = self._callers.get(hook)
        if callers is None:
            callers = self._callers[hook] = [(plugin, _invoker(impl)) for plugin, impl in self.implementations(hook)]
        for plugin, invoke in callers:
            try:
                value = invoke(kwargs)
            except Exception as exc:
                value = self._fail(plugin, hook, f"{hook} raised {describe(exc)}")
            else:
                if value is not None and not awaitable and inspect.isawaitable(value):
                    _discard(value)  # its spec is not marked awaitable: nobody would await it
                    value = self._fail(plugin, hook, f"{hook} returned an awaitable; it must be a plain function")
            yield plugin, value

    async def _settled(self, plugin: str, hook: str, value: Any) -> Any:
        """What an ``async`` implementation's awaitable gives; raising there is a failure too."""
        try:
            return await value
        except Exception as exc:
            return self._fail(plugin, hook, f"{hook} raised {describe(exc)}")

    async def _answers(self, hook: str, kwargs: dict[str, Any]) -> AsyncIterator[tuple[str, Any]]:
        """(plugin, answer) for each implementation of ``hook`` that answered something but None,
        an ``async`` one's awaited; a failure is a ``Failure`` answer. For the hooks called once a
        turn or a model call; those called for every tool call loop inline (``bench/dispatch.py``:
        the generator costs 1 µs a call)."""
        for plugin, value in self._each(hook, kwargs):
            if value is not None and inspect.isawaitable(value):
                value = await self._settled(plugin, hook, value)
            if value is not None:
                yield plugin, value

    def _refusal(self, plugin: str, hook: str, value: Any, expected: str) -> str:
        """The line that refuses the call checked by ``hook``: ``value``'s own failure, or that it
        is not what the hook returns (a failure of ``plugin`` by the hook's policy)."""
        failure = value if isinstance(value, Failure) else self._fail(plugin, hook, wrong_type(hook, value, expected))
        return failure.line

    # --- registration, observation, lifecycle, context -----------------------------------

    def collect(self, hook: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call a registration hook in every plugin: (plugin, value) for those that did not fail."""
        return [(plugin, value) for plugin, value in self._each(hook, kwargs) if not isinstance(value, Failure)]

    def observe(self, hook: str, **kwargs: Any) -> None:
        """Call an observer everywhere; one that raises is dropped for the run."""
        for _ in self._each(hook, kwargs):
            pass

    async def lifecycle(self, hook: str, **kwargs: Any) -> None:
        """``crab_startup`` (a failure fails the plugin), ``crab_session_end`` or ``crab_shutdown``
        (reported only)."""
        async for _ in self._answers(hook, kwargs):
            pass

    def system_prompt(self, **kwargs: Any) -> list[str]:
        """Every plugin's prompt parts, in order; a part of the wrong type drops that hook."""
        hook = "crab_system_prompt"
        parts: list[str] = []
        for plugin, value in self._each(hook, kwargs):
            if isinstance(value, Failure):
                continue
            items = [value] if isinstance(value, str) else value
            if items is not None and not (isinstance(items, list) and all(isinstance(v, str) for v in items)):
                self._fail(plugin, hook, wrong_type(hook, value, "str, a list of str or None"))
            elif items:
                parts.extend(v.strip() for v in items if v.strip())
        return parts

    def completions(self, **kwargs: Any) -> list[tuple[str, str]]:
        """Every plugin's ``(text, description)`` pairs for a word, in plugin order, each text
        once (one line; a description its first line), at most ``MAX_COMPLETIONS``; a failing
        implementation is dropped (typing goes on)."""
        hook = "crab_completions"
        found: dict[str, str] = {}
        for plugin, value in self._each(hook, kwargs):
            if isinstance(value, Failure):
                continue
            if value is not None and not (isinstance(value, list | tuple) and all(map(_is_pair, value))):
                self._fail(plugin, hook, wrong_type(hook, value, "a list of (text, description) pairs or None"))
                continue
            for text, about in value or ():
                if text.strip() and "\n" not in text and text not in found:
                    found[text] = (about.strip().splitlines() or [""])[0]
                if len(found) >= MAX_COMPLETIONS:
                    return list(found.items())
        return list(found.items())

    async def turn_end(self, session_id: str, workspace: Any, text: str, continued: int) -> str | None:
        """What every ``crab_turn_end`` asks the model to go on with (joined), or None to end the turn."""
        hook = "crab_turn_end"
        parts: list[str] = []
        kwargs = {"session_id": session_id, "workspace": workspace, "text": text, "continued": continued}
        async for plugin, value in self._answers(hook, kwargs):
            if not isinstance(value, str | Failure):
                self._fail(plugin, hook, wrong_type(hook, value, "str or None"))
            elif isinstance(value, str) and value.strip():
                parts.append(value.strip())
        return "\n\n".join(parts) or None

    # --- interception: each one sees what the one before it left ---------------------------

    async def before_model_call(self, request: ModelRequest, session_id: str) -> ModelRequest:
        """The request as every ``crab_before_model_call`` left it; raises ``ModelCallRefused``."""
        from crab._contracts.providers import ModelRequest

        hook = "crab_before_model_call"
        if (closed := self._closed.get(hook)) is not None:
            raise ModelCallRefused(f"model call refused: {closed.line}; fix or disable that plugin")
        kwargs = {"request": request, "session_id": session_id}
        async for plugin, value in self._answers(hook, kwargs):
            if not isinstance(value, ModelRequest):
                raise ModelCallRefused(
                    f"model call refused: {self._refusal(plugin, hook, value, 'ModelRequest or None')}"
                )
            request = kwargs["request"] = value
        return request

    async def before_tool_call(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> tuple[ToolCall, Deny | None]:
        """``call`` as the interceptors left it, and the ``Deny`` that refuses it (first one wins)."""
        from crab._contracts.interception import Allow, Deny, Replace

        hook = "crab_before_tool_call"
        if (closed := self._closed.get(hook)) is not None:
            return call, Deny(f"Refused: {closed.line}; it checks every tool call, so none can run until it is fixed.")
        kwargs = {"call": call, "tool": tool, "ctx": ctx}
        for plugin, value in self._each(hook, kwargs):  # not _answers: an async generator per call costs 1 µs
            if value is not None and inspect.isawaitable(value):
                value = await self._settled(plugin, hook, value)
            if value is None or isinstance(value, Allow):
                continue
            if isinstance(value, Replace):
                call = kwargs["call"] = replace(call, arguments=dict(value.arguments))
            else:
                return call, value if isinstance(value, Deny) else Deny(
                    f"Refused: {self._refusal(plugin, hook, value, 'a Decision or None')}"
                )
        return call, None

    async def permission_request(self, request: Any, session_id: str, workspace: Any) -> str | None:
        """The first ``crab_permission_request`` answer (``"once"`` or ``"deny"``), or None when
        none answers and the user is asked; a failure is ``"deny"`` (fail closed)."""
        hook = "crab_permission_request"
        if hook in self._closed:
            return "deny"
        kwargs = {"request": request, "session_id": session_id, "workspace": workspace}
        async for plugin, value in self._answers(hook, kwargs):
            if value not in ("once", "always", "deny"):
                self._refusal(plugin, hook, value, '"once", "deny" or None')
            return "once" if value in ("once", "always") else "deny"
        return None

    async def after_tool_call(self, call: ToolCall, tool: Tool, result: ToolResult, ctx: ToolContext) -> ToolResult:
        """``result`` as every ``crab_after_tool_call`` left it; a failing one withholds it."""
        from crab._contracts.tools import ToolResult

        hook = "crab_after_tool_call"
        if (closed := self._closed.get(hook)) is not None:
            return ToolResult(f"Result withheld: {closed.line}; it checks every tool result.", is_error=True)
        kwargs = {"call": call, "tool": tool, "result": result, "ctx": ctx}
        for plugin, value in self._each(hook, kwargs):  # as in before_tool_call
            if value is not None and inspect.isawaitable(value):
                value = await self._settled(plugin, hook, value)
            if value is None:
                continue
            if not isinstance(value, ToolResult):
                line = self._refusal(plugin, hook, value, "ToolResult or None")
                return ToolResult(f"Result withheld: {line}", is_error=True)
            result = kwargs["result"] = value
        return result

    async def prompt_submit(
        self, prompt: str, session_id: str, workspace: Any, config: Any = None
    ) -> tuple[Deny | None, list[str | UserMessage]]:
        """The ``Deny`` that refuses a user's prompt (first one wins), else the context to add
        (texts, and messages that carry images)."""
        from crab._contracts.interception import Deny
        from crab._contracts.messages import UserMessage

        hook = "crab_prompt_submit"
        if (closed := self._closed.get(hook)) is not None:
            return Deny(f"Refused: {closed.line}; it checks every prompt, so none can go until it is fixed."), []
        context: list[str | UserMessage] = []
        kwargs = {"prompt": prompt, "session_id": session_id, "workspace": workspace, "config": config}
        async for plugin, value in self._answers(hook, kwargs):
            if isinstance(value, Deny):
                return value, []
            if not isinstance(value, str | UserMessage):
                return Deny(f"Refused: {self._refusal(plugin, hook, value, 'Deny, str, UserMessage or None')}"), []
            if isinstance(value, UserMessage) and (value.content.strip() or value.images):
                context.append(value)
            elif isinstance(value, str) and value.strip():
                context.append(value.strip())
        return None, context
