"""The one hookspec marker, with what a failing implementation costs beside each hook's docstring
(core's hooks in ``crab._host.hookspecs`` and those a plugin declares in ``CRAB_HOOKSPECS``), and
the checks on a plugin's declarations (docs/hooks.md#when-a-hook-fails, #hooks-a-plugin-declares)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args, overload

import pluggy

PROJECT = "crab"
F = TypeVar("F", bound=Callable[..., Any])
Category = Literal["registration", "context", "interception", "observation", "lifecycle"]
OnFailure = Literal["fail-plugin", "drop", "refuse"]
"""``fail-plugin``: the plugin is marked failed and all it registered is gone for the run; ``drop``:
that one implementation is not called again, the plugin's other hooks keep working; ``refuse``
(interceptors): the call being checked is refused in its place (fail closed), and a plugin that
failed while it had an interceptor keeps refusing those calls."""


@dataclass(frozen=True, slots=True)
class HookPolicy:
    """How a hook is called (``awaitable``: an implementation may be ``async``) and what a failing
    implementation costs."""

    category: Category
    on_failure: OnFailure
    awaitable: bool = False


_mark = pluggy.HookspecMarker(PROJECT)
_POLICY_ATTRIBUTE = "crab_hook_policy"
_DEFAULT = HookPolicy("registration", "fail-plugin")
ATTRIBUTE = "CRAB_HOOKSPECS"
"""The attribute of a plugin object that holds its hook declarations."""


@overload
def hookspec(
    function: F, *, on_failure: OnFailure = "fail-plugin", category: Category = "registration", awaitable: bool = False
) -> F: ...


@overload
def hookspec(
    function: None = None,
    *,
    on_failure: OnFailure = "fail-plugin",
    category: Category = "registration",
    awaitable: bool = False,
) -> Callable[[F], F]: ...


def hookspec(
    function: F | None = None,
    *,
    on_failure: OnFailure = "fail-plugin",
    category: Category = "registration",
    awaitable: bool = False,
) -> F | Callable[[F], F]:
    """Mark a function as a hook (``@crab.hookspec`` or ``@crab.hookspec(on_failure=…)``); core's
    hooks carry the same mark (``crab._host.hookspecs``).

    Its docstring is the hook's documentation and its parameters what every call passes (an
    implementation may take any subset). ``on_failure`` is what an implementation that raises or
    returns the wrong type costs: ``fail-plugin`` (default: that plugin and all it registered are
    gone for the run) or ``drop`` (only that implementation is not called again); ``refuse`` is for
    core's interceptors. ``category`` and ``awaitable`` say how the dispatcher calls it: a hook a
    plugin declares is a plain ``registration`` hook (``declaration_problem`` refuses any other).
    """
    if on_failure not in get_args(OnFailure):
        raise ValueError(f"on_failure must be 'fail-plugin' or 'drop' (or core's 'refuse'), not {on_failure!r}")
    if category not in get_args(Category):
        raise ValueError(f"category must be one of {', '.join(get_args(Category))}, not {category!r}")
    policy = HookPolicy(category, on_failure, awaitable)

    def mark(target: F) -> F:
        marked: F = _mark(target)
        setattr(marked, _POLICY_ATTRIBUTE, policy)
        return marked

    return mark if function is None else mark(function)


def declared_hooks(specs: object) -> Iterator[tuple[str, HookPolicy]]:
    """(hook name, policy) for every function ``specs`` marks with ``@crab.hookspec``."""
    for name in sorted(dir(specs)):
        function = getattr(specs, name, None)
        if getattr(function, f"{PROJECT}_spec", None) is None:
            continue
        yield name, getattr(function, _POLICY_ATTRIBUTE, _DEFAULT)


def declaration_problem(specs: object, taken: dict[str, str]) -> str | None:
    """Why ``specs`` cannot be added (no marked function, a name outside ``crab_``, a policy only
    core's hooks have, one already declared by core or another plugin: ``taken`` maps hook →
    declarer), or None."""
    found = list(declared_hooks(specs))
    if not found:
        return f"{ATTRIBUTE} holds no function marked with @crab.hookspec"
    for name, policy in found:
        if not name.startswith(f"{PROJECT}_"):
            return f"declares hook {name}, whose name must start with {PROJECT}_"
        if policy.category != "registration" or policy.on_failure == "refuse" or policy.awaitable:
            return (
                f"declares hook {name} as {policy.category}/{policy.on_failure}, but a plugin's hooks are plain "
                "registration hooks: mark it @crab.hookspec or @crab.hookspec(on_failure='drop')"
            )
        owner = taken.get(name)
        if owner is not None:
            return f"declares hook {name}, which {owner} already declares; rename it"
    return None


def spec_arguments(specs: object, name: str) -> frozenset[str]:
    """The arguments hook ``name`` of ``specs`` passes (a class namespace's ``self`` left out), by
    pluggy 1.7's ``HookSpec`` rule, known before ``add_hookspecs`` (which refuses a spec part-way
    through at the first implementation that does not fit it; ``HookSpec`` is not public)."""
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
