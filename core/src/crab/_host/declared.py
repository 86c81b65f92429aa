"""Hooks a plugin declares for other plugins to implement: the ``crab.hookspec`` marker and the
checks (``CRAB_HOOKSPECS``; docs/hooks.md#hooks-a-plugin-declares)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal, TypeVar, overload

import pluggy

from crab._host.dispatch import HookPolicy
from crab._host.hookspecs import PROJECT

F = TypeVar("F", bound=Callable[..., Any])
DeclaredFailure = Literal["fail-plugin", "drop"]

_mark = pluggy.HookspecMarker(PROJECT)
_POLICY_ATTRIBUTE = "crab_hook_policy"
ATTRIBUTE = "CRAB_HOOKSPECS"
"""The attribute of a plugin object that holds its hook declarations."""


@overload
def hookspec(function: F, *, on_failure: DeclaredFailure = "fail-plugin") -> F: ...


@overload
def hookspec(function: None = None, *, on_failure: DeclaredFailure = "fail-plugin") -> Callable[[F], F]: ...


def hookspec(function: F | None = None, *, on_failure: DeclaredFailure = "fail-plugin") -> F | Callable[[F], F]:
    """Mark a function as a hook this plugin declares (``@crab.hookspec`` or ``@crab.hookspec(on_failure=…)``).

    Its docstring is the hook's documentation and its parameters what every call passes (an
    implementation may take any subset). ``on_failure`` is what an implementation that raises or
    returns an awaitable costs: ``fail-plugin`` (default, like core's registration hooks: that
    plugin and all it registered are gone for the run) or ``drop`` (only that implementation is
    not called again).
    """
    if on_failure not in ("fail-plugin", "drop"):
        raise ValueError(f"on_failure must be 'fail-plugin' or 'drop', not {on_failure!r}")

    def mark(target: F) -> F:
        marked: F = _mark(target)
        setattr(marked, _POLICY_ATTRIBUTE, HookPolicy("registration", on_failure))
        return marked

    return mark if function is None else mark(function)


def declarations(plugin: object) -> object | None:
    """The namespace of hookspecs ``plugin`` declares (its ``CRAB_HOOKSPECS``), or None."""
    return getattr(plugin, ATTRIBUTE, None)


def declared_hooks(specs: object) -> Iterator[tuple[str, HookPolicy]]:
    """(hook name, policy) for every function ``specs`` marks with ``@crab.hookspec``."""
    for name in sorted(dir(specs)):
        function = getattr(specs, name, None)
        if getattr(function, f"{PROJECT}_spec", None) is None:
            continue
        yield name, getattr(function, _POLICY_ATTRIBUTE, HookPolicy("registration", "fail-plugin"))


def declaration_problem(specs: object, taken: dict[str, str]) -> str | None:
    """Why ``specs`` cannot be added (no marked function, a name outside ``crab_``, one already
    declared by core or another plugin: ``taken`` maps hook → declarer), or None."""
    found = list(declared_hooks(specs))
    if not found:
        return f"{ATTRIBUTE} holds no function marked with @crab.hookspec"
    for name, _ in found:
        if not name.startswith(f"{PROJECT}_"):
            return f"declares hook {name}, whose name must start with {PROJECT}_"
        owner = taken.get(name)
        if owner is not None:
            return f"declares hook {name}, which {owner} already declares; rename it"
    return None


def spec_arguments(specs: object, name: str) -> frozenset[str]:
    """The arguments hook ``name`` of ``specs`` passes (a class namespace's ``self`` left out)."""
    import inspect

    parameters = list(inspect.signature(getattr(specs, name)).parameters)
    method = inspect.isclass(specs) and not isinstance(inspect.getattr_static(specs, name), staticmethod)
    if method and parameters and parameters[0] in ("self", "cls"):
        parameters = parameters[1:]
    return frozenset(parameters)


def near_miss(hook: str, declared: Iterable[str]) -> str | None:
    """The declared hook ``hook`` is most likely a misspelling of, or None when none is that close.

    Close means one or two characters apart (``crab_tool`` for ``crab_tools``): a hook of a plugin
    that is not loaded (``crab_job_stores`` without crab-schedule) is further from every core hook.
    """
    import difflib

    found = difflib.get_close_matches(hook, list(declared), n=1, cutoff=0.9)
    return found[0] if found else None
