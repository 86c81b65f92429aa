"""Which installed plugins a run loads, in which order, and why each other does not: ``--plugins``
or a program's list, ``CRAB_PLUGINS``, ``[plugins] enabled``/``disabled`` (docs/plugins.md). The
plugin host asks it once it has read the installed names (``PluginHost.load_entry_points``)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from crab._config import environ
from crab._host.plugin_host import DISABLED_REASON, PluginChoice

if TYPE_CHECKING:
    from crab._contracts.config import Config


def parse_plugin_list(text: str) -> list[str]:
    """``"a, b"`` → ``["a", "b"]``; the empty string means no plugins."""
    return [part.strip() for part in text.split(",") if part.strip()]


def select_plugins(
    installed: Sequence[str],
    config: Config | None,
    cli: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    cli_source: str = "--plugins",
) -> tuple[list[str], dict[str, str]]:
    """Which plugins load, in which order, and why each other one does not.

    Precedence: ``--plugins`` on the command line, then ``CRAB_PLUGINS``, then ``[plugins]
    enabled`` (config order), else every installed plugin sorted by name; ``[plugins] disabled``
    then removes names from the config-based choice; ``cli_source`` names ``cli`` in the reasons (a
    program's list is no flag). Returns (names to load, {name: reason}).
    """
    from_env = environ.plugin_list(env)
    reasons: dict[str, str] = {}
    if cli is not None:
        chosen, source = list(cli), cli_source
    elif from_env is not None:
        chosen, source = parse_plugin_list(from_env), environ.PLUGINS
    else:
        enabled = config.get("plugins.enabled") if config else None
        disabled = set(config.get("plugins.disabled") or ()) if config else set()
        if enabled is not None:
            chosen, source = list(enabled), "[plugins] enabled"
        else:
            chosen, source = sorted(installed), ""
        for name in [n for n in chosen if n in disabled]:
            chosen.remove(name)
            reasons[name] = DISABLED_REASON
    ordered = list(dict.fromkeys(chosen))  # first mention wins, order kept
    for name in installed:
        if name not in ordered and name not in reasons:
            reasons[name] = f"not listed in {source}" if source else "disabled"
    return ordered, reasons


def near_names(name: str, installed: Collection[str]) -> list[str]:
    """Installed plugin names that look like ``name`` (``provider-mok`` → ``provider-mock``)."""
    import difflib

    return difflib.get_close_matches(name, sorted(installed), n=2, cutoff=0.75)


def near_hint(name: str, installed: Collection[str]) -> str:
    """``: did you mean X? (else pip install crab-NAME)``, or `` (pip install crab-NAME?)`` when no
    installed name is close."""
    near = near_names(name, installed)
    if near:
        return f": did you mean {' or '.join(near)}? (else pip install crab-{name})"
    return f" (pip install crab-{name}?)"


def listed_in(source: str) -> str:
    return f"listed in {source}" if source else "enabled"


def check_listed(chosen: Sequence[str], installed: Collection[str], source: str) -> None:
    """Raise ``UsageError`` naming every plugin in ``chosen`` that is not installed, with the
    installed names that look like each."""
    from crab._contracts.errors import UsageError

    unknown = [name for name in chosen if name not in installed]
    if not unknown:
        return
    names = ", ".join(repr(name) for name in unknown)
    near = [n for name in unknown for n in near_names(name, installed)]
    verb = "is" if len(unknown) == 1 else "are"
    hint = (
        f"did you mean {' or '.join(near)}?"
        if near
        else "`crab plugins list` shows the installed ones, `crab plugins install NAME` adds one"
    )
    raise UsageError(f"{source} names {names}, which {verb} not installed: {hint}")


def order_source(
    config: Config | None,
    cli: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    cli_source: str = "--plugins",
) -> str:
    """Where the user wrote the load order ``select_plugins`` follows; empty when nobody did
    (every installed plugin, sorted by name): then a name clash settles nothing by order."""
    if cli is not None:
        return cli_source
    if environ.plugin_list(env) is not None:
        return environ.PLUGINS
    if config is not None and config.get("plugins.enabled") is not None:
        return "[plugins] enabled"
    return ""


def choose_plugins(
    config: Config | None,
    cli: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    cli_source: str = "--plugins",
) -> Callable[[Sequence[str]], PluginChoice]:
    """What ``PluginHost.load_entry_points`` asks with the installed names: ``select_plugins``,
    where the order came from, and what each chosen name that is not installed is told.

    ``cli`` is ``--plugins`` (None when not given; ``cli_source`` names it in messages, a
    program's list being no flag); ``CRAB_PLUGINS`` is read from ``env``.
    """

    def choose(installed: Sequence[str]) -> PluginChoice:
        chosen, reasons = select_plugins(installed, config, cli, env, cli_source)
        source = order_source(config, cli, env, cli_source)
        if cli is not None and cli_source == "--plugins":
            # The user's word for this one command: a name that matches nothing is a usage error
            # (one line, exit 2), not a warning followed by whatever error its absence causes.
            check_listed(chosen, installed, cli_source)
        missing = {
            name: f"{listed_in(source)} but not installed{near_hint(name, installed)}"
            for name in chosen
            if name not in installed
        }
        return PluginChoice(chosen, reasons, source, missing)

    return choose
