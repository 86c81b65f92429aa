"""Finding, loading and isolating the plugins a run chose (``crab._assembly.plugin_choice``), each
with its status and how it came to load (its ``Rank``); the registries built from their items are
composition, ``crab._assembly.registries``, reached through ``PluginHost.registries``
(docs/architecture.md#the-dispatcher, docs/plugins.md)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol

import pluggy

from crab._config import environ
from crab._host import declared, hookspecs
from crab._host.api_version import api_problem
from crab._host.dispatch import Dispatcher, Failure, describe

if TYPE_CHECKING:
    from crab._contracts.config import Config
    from crab._contracts.tools import Tool
    from crab._host.entry_points import EntryPoint

ENTRY_POINT_GROUP = "crab"
Status = Literal["loaded", "disabled", "failed", "missing", "builtin"]
DISABLED_REASON = "disabled in config ([plugins] disabled)"


@dataclass(frozen=True)
class PluginChoice:
    """Which plugins load, in order (``chosen``, names not installed included), why each other
    installed one does not (``reasons``), where the user wrote the order (``source``; empty when
    nobody did: then a name clash settles nothing by order) and what a chosen name that is not
    installed is told (``missing``)."""

    chosen: list[str]
    reasons: dict[str, str]
    source: str = ""
    missing: dict[str, str] = field(default_factory=dict)


GUARD_HOOKS = ("crab_before_tool_call", "crab_after_tool_call", "crab_before_model_call")
"""Hooks that guard what crab does: a plugin implementing one is never switched off by an
untrusted project (switching off a guard widens what crab may do)."""

OWN_NAMES = frozenset(
    {"core", "loop-guard", "tool-view", "permissions", "crab-config", "crab-thinking", "last-run"}
    | {"program-tools", "program-runs"}
)
"""Plugin names crab gives its own plugins (built-ins, and what ``crab.Agent`` registers for a
program): an installed plugin by one of these names fails, since it would stand in for crab's own
(an installed ``program-runs`` left a library run waiting for events forever)."""
Kind = Literal["tools", "providers", "stores", "renderers", "commands", "channels"]

CORE, PROGRAM, LISTED, OWN_INSTALLED, INSTALLED = 0, 1, 2, 3, 4
"""Rank classes, strongest first: crab's built-ins, the program's, the user's order, installed only
from one of crab's own distributions (``crab._assembly.registries.crab_own``), installed only."""


@dataclass(frozen=True, slots=True)
class Rank:
    """How a plugin came to its place in load order: its class and, for ``LISTED``, where the
    user listed it (``--plugins``, ``CRAB_PLUGINS``, ``[plugins] enabled``); a name clash is settled
    by it (``crab._assembly.registries``)."""

    level: int
    source: str = ""


class Registries(Protocol):
    """Every loaded plugin's items by kind, built by the composition root (``crab._assembly.registries``)
    and reached through the host, which the loop is given."""

    def collect_all(self) -> None: ...
    def registry(self, kind: Kind) -> dict[str, Any]: ...
    def add_tools(self, plugin: str, tools: Sequence[Tool]) -> list[str]: ...


class _Manager(pluggy.PluginManager):
    """pluggy's manager, looking only at ``crab_`` names for implementations: every hook crab knows is
    named so (core's, and those a plugin declares: ``declared.declaration_problem``). pluggy would
    otherwise inspect every name of each plugin module (its imports too) with
    ``inspect.getattr_static``, a third of what ``crab plugins list`` costs."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        if not name.startswith(f"{hookspecs.PROJECT}_"):
            return None
        return super().parse_hookimpl_opts(plugin, name)


@dataclass
class PluginRecord:
    """One plugin's identity and status; ``reason`` explains ``failed``, ``disabled`` or ``missing``."""

    name: str
    status: Status
    distribution: str | None = None
    version: str | None = None
    target: str | None = None
    reason: str | None = None
    hooks: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def discover_entry_points() -> list[EntryPoint]:
    """Installed plugins' entry points, listed from package metadata (nothing is imported)."""
    from crab._host.entry_points import entry_points

    return entry_points(ENTRY_POINT_GROUP)


def _record(ep: EntryPoint, status: Status, reason: str | None = None) -> PluginRecord:
    dist = ep.dist
    return PluginRecord(ep.name, status, dist and dist.name, dist and dist.version, ep.value, reason)


class PluginHost:
    """Owns the pluggy manager and every plugin's status; the registries are built from its plugins'
    items by ``registries`` (composition: ``crab._assembly.registries``, attached by the root).

    Every hook call goes through ``self.dispatch`` (load order: config order, else by name,
    honouring ``tryfirst``/``trylast``), so one plugin's failure is attributed to it, handled by
    the hook's policy and reported once; a failing plugin is never fatal unless
    ``CRAB_STRICT_PLUGINS=1``. Plugins are entry points in group ``crab`` (the entry-point name
    is the plugin's name), listed without importing them; one not enabled is never imported. Each
    ends with a status: ``loaded``, ``disabled``, ``failed`` (a one-line reason), ``missing``
    (enabled, not installed) or ``builtin``; a loaded one may carry ``faults`` (one hook or one
    contribution lost). ``load_entry_points`` computes what loading finds, the same for every
    command (``crab plugins list`` shows it; runs and ``doctor`` go on to call hooks). Hooks a
    plugin declares (``CRAB_HOOKSPECS``) are added before any implementation is registered, so
    every enabled plugin's hooks are known whatever the load order.
    """

    def __init__(self, config: Config, *, strict: bool | None = None) -> None:
        self.config = config
        self.pm: pluggy.PluginManager = _Manager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        self.strict = environ.strict_plugins() if strict is None else strict
        self.order: dict[str, int] = {}
        """Registered plugin → its place in load order (a failed one leaves it)."""
        self.registrations = 0
        """How many plugins were registered so far: with ``len(order)``, what was built from them is
        stale when either changed (``crab._assembly.registries``)."""
        self.ranks: dict[str, Rank] = {}
        """Plugin → how it came to its place in load order; none: installed only."""
        self.registries: Registries
        """What is built from the plugins' items, attached by the composition root
        (``crab._assembly.choosing.build_host``; ``crab plugins list`` and ``crab_cli`` build none)."""
        self.dispatch = Dispatcher(self.pm, self.order, self.fail, self.fault, strict=self.strict)
        self.declarers: dict[str, str] = dict.fromkeys(self.dispatch.policies, "core")
        """Hook → who declares it: ``core`` or ``plugin NAME``."""
        self.unread_source = ""
        """Who chose no installed plugin when no metadata was read for it (a program's ``plugins=[]``):
        an error about a missing store or provider reads it then (``crab._assembly.not_loaded``)."""

    # --- loading --------------------------------------------------------------------------

    def add_builtin(self, name: str, plugin: object) -> None:
        """Register one of core's own plugins (always on, listed as ``builtin``)."""
        self.dispatch.core.add(name)
        self.ranks.setdefault(name, Rank(CORE))
        self._admit_all([(name, plugin, PluginRecord(name=name, status="builtin", distribution="crab-core"))])

    def load_entry_points(
        self, choose: Callable[[Sequence[str]], PluginChoice], entry_points: Sequence[EntryPoint] | None = None
    ) -> None:
        """Discover installed plugins, let ``choose`` pick the enabled ones from their names
        (``crab._assembly.plugin_choice``) and import only those."""
        found = discover_entry_points() if entry_points is None else list(entry_points)
        by_name: dict[str, EntryPoint] = {}
        for ep in found:
            if ep.name in by_name:
                other = by_name[ep.name].dist
                reason = f"the name {ep.name!r} is also used by {other.name if other else '?'}; uninstall one of them"
                self._fail(_record(ep, "failed"), reason)
                continue
            by_name[ep.name] = ep
        choice = choose(list(by_name))
        chosen, reasons, source = choice.chosen, choice.reasons, choice.source
        if source:
            for name in chosen:
                self.ranks.setdefault(name, Rank(LISTED, source))
        for name, reason in reasons.items():
            if name not in self.records:
                self.records[name] = _record(by_name[name], "disabled", reason)
        imported: list[tuple[str, object, PluginRecord]] = []
        chosen = [*chosen, *self._guards_a_project_cannot_disable(by_name, reasons)]
        for name in chosen:
            if name in self.records and self.records[name].status == "failed":
                continue
            if name in OWN_NAMES and name in by_name:
                reason = (
                    f"the name {name!r} is crab's own (one of its built-in plugins); rename the plugin's entry point"
                )
                self.dispatch.report(Failure(name, reason))
                continue
            if name not in by_name:
                reason = choice.missing[name]
                self.records[name] = PluginRecord(name=name, status="missing", reason=reason)
                self.dispatch.report(Failure(name, reason, status="missing"))
                continue
            loaded = self._import_one(by_name[name])
            if loaded is not None:
                imported.append((name, *loaded))
        self._admit_all(imported)

    def _guards_a_project_cannot_disable(self, by_name: Mapping[str, EntryPoint], reasons: dict[str, str]) -> list[str]:
        """Plugins only an untrusted project switched off that guard tool or model calls: they load.

        Narrowing what loads needs no trust, but switching off a guard (a sandbox, a policy on
        tool calls) widens what crab may do, so that stays the user's word. The plugin is
        imported to see its hooks; the notice says what was kept and how to let the project.
        """
        config = self.config
        if config is None or not config.project_disabled:
            return []
        kept = []
        for name in list(config.project_disabled):
            ep = by_name.get(name)
            if ep is None or reasons.get(name) != DISABLED_REASON:
                continue
            try:
                plugin = ep.load()
            except Exception:  # one that cannot load guards nothing: it stays off, as the project asked
                continue
            if not any(callable(getattr(plugin, hook, None)) for hook in GUARD_HOOKS):
                continue
            kept.append(name)
            del reasons[name]
            self.records.pop(name, None)
            config.project_disabled.remove(name)
            config.kept_guards.append(name)  # the config's next resolution keeps it on too
        return kept

    def load_objects(self, plugins: Mapping[str, object]) -> None:
        """Register in-process plugin objects (modules, instances) as if they were installed; the
        program gave them, so they win a name clash with an installed plugin (``crab._assembly.registries``)."""
        for name in plugins:
            self.ranks.setdefault(name, Rank(PROGRAM))
        self._admit_all([(n, plugin, PluginRecord(n, "loaded", target=repr(plugin))) for n, plugin in plugins.items()])

    def _import_one(self, ep: EntryPoint) -> tuple[object, PluginRecord] | None:
        """Import one entry point (and make its object when it names a class); None when that failed."""
        record = _record(ep, "loaded")
        try:
            plugin = ep.load()
        except (Exception, SystemExit) as exc:
            self._fail(record, f"importing {ep.value} raised {describe(exc)}")
            return None
        if inspect.isclass(plugin):
            try:
                plugin = plugin()
            except Exception as exc:
                self._fail(record, f"creating the plugin object raised {describe(exc)}")
                return None
        return plugin, record

    def _admit_all(self, plugins: Sequence[tuple[str, object, PluginRecord]]) -> None:
        """Check each plugin's API range and add the hooks it declares, then register them all: a
        plugin implementing a hook another one declares may come first in load order."""
        admitted = []
        for name, plugin, record in plugins:
            holder = self.records.get(name)
            if holder is not None and self.pm.get_plugin(name) is not None:
                # The name is taken (core's permission gate is ``permissions``): failing the newcomer
                # through ``_fail`` would unregister the holder, so a package could switch a guard off.
                who = (
                    "core's built-in plugin" if holder.status == "builtin" else holder.distribution or "another plugin"
                )
                reason = f"the name {name!r} is already used by {who}; give this plugin another name"
                self.dispatch.report(Failure(name, reason))
                continue
            self.records[name] = record
            wanted: object = getattr(plugin, "CRAB_API", None)
            problem = api_problem(wanted) if wanted is not None else None
            if problem is not None:
                self._fail(record, problem)
            elif self._declare(plugin, record):
                admitted.append((name, plugin, record))
        for name, plugin, record in admitted:
            self._register(name, plugin, record)

    def _declare(self, plugin: object, record: PluginRecord) -> bool:
        """Add the hookspecs ``plugin`` declares (``CRAB_HOOKSPECS``); False when it failed for them."""
        specs: object = getattr(plugin, declared.ATTRIBUTE, None)
        if specs is None:
            return True
        if not isinstance(specs, (ModuleType, type)):
            self._fail(record, f"{declared.ATTRIBUTE} must be a class or module, not {type(specs).__name__}")
            return False
        problem = declared.declaration_problem(specs, self.declarers)
        if problem is not None:
            self._fail(record, problem)
            return False
        hooks = dict(declared.declared_hooks(specs))
        for hook in hooks:
            self._drop_misfits(hook, declared.spec_arguments(specs, hook))
        try:
            self.pm.add_hookspecs(specs)
        except Exception as exc:  # pluggy's own checks: this plugin's problem, not the whole host's
            self._fail(record, f"{declared.ATTRIBUTE}: {describe(exc)}")
            return False
        for hook, policy in hooks.items():
            self.declarers[hook] = f"plugin {record.name}"
            self.dispatch.policies[hook] = policy
        self.dispatch.invalidate()
        return True

    def _drop_misfits(self, hook: str, arguments: frozenset[str]) -> None:
        """Fail every plugin registered earlier whose ``hook`` takes an argument the new spec does not
        pass (pluggy would refuse the spec part-way through instead)."""
        caller = getattr(self.pm.hook, hook, None)
        for impl in caller.get_hookimpls() if caller is not None else []:
            extra = sorted(set(impl.argnames) - arguments)
            if extra:
                self.fail(impl.plugin_name, f"its {hook} takes {', '.join(extra)}, which the hook does not pass")

    def _register(self, name: str, plugin: object, record: PluginRecord) -> None:
        problem = unsupported_hooks(self.pm, plugin, self.declarers)
        if problem is not None:
            self._fail(record, problem)
            return
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:
            self._fail(record, f"invalid hook implementation: {describe(exc)}")
            return
        self.order[name] = len(self.order)
        record.hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])
        self.registrations += 1
        self.dispatch.invalidate()

    def _fail(self, record: PluginRecord, reason: str) -> None:
        record.status = "failed"
        record.reason = reason
        self.records[record.name] = record
        plugin = self.pm.get_plugin(record.name)
        if plugin is not None:
            self.pm.unregister(plugin, name=record.name)
        self.order.pop(record.name, None)
        self.dispatch.plugin_failed(record.name, Failure(record.name, reason), record.hooks)

    def fail(self, name: str, reason: str) -> None:
        """Mark a loaded plugin failed and unregister all of it for the rest of the run."""
        record = self.records.get(name)
        if record is not None and record.status in ("loaded", "builtin"):
            self._fail(record, reason)

    def fault(self, name: str, reason: str, *others: str) -> None:
        """Record that one hook or contribution of ``name`` (and of ``others``, who lost it with it)
        was lost, in one line; the rest keeps working."""
        for plugin in (name, *others):
            record = self.records.get(plugin)
            if record is not None and reason not in record.faults:
                record.faults.append(reason)
        self.dispatch.report(Failure(name, reason))

    # --- registries (built by ``crab._assembly.registries``) ------------------------------------

    def collect_all(self) -> None:
        """Run every registration hook (once): ``Registries.collect_all``."""
        self.registries.collect_all()

    def registry(self, kind: Kind) -> dict[str, Any]:
        """Name → object for one kind: ``Registries.registry``."""
        return self.registries.registry(kind)

    def add_tools(self, plugin: str, tools: Sequence[Tool]) -> list[str]:
        """Add tools ``plugin`` learned of after start-up: ``Registries.add_tools``."""
        return self.registries.add_tools(plugin, tools)

    # --- reporting ------------------------------------------------------------------------

    def problems(self) -> list[PluginRecord]:
        """Plugins that failed, are missing, or lost part of what they offer."""
        return [r for r in self.records.values() if r.status in ("failed", "missing") or r.faults]

    @property
    def failures(self) -> list[Failure]:
        """Every failure so far, in order, each once (``failure.line`` is what users see)."""
        return list(self.dispatch.failures)


def _marked(plugin: object, attr: str) -> bool:
    """Whether ``plugin``'s ``attr`` carries crab's ``hookimpl`` mark, found without running a
    property or ``__getattr__`` (a plugin's own dict, then its class's)."""
    for space in (getattr(plugin, "__dict__", {}), *(vars(c) for c in type(plugin).__mro__)):
        if attr in space:
            value = space[attr]
            return isinstance(getattr(getattr(value, "__func__", value), f"{hookspecs.PROJECT}_impl", None), dict)
    return False


def unsupported_hooks(pm: pluggy.PluginManager, plugin: object, known: Collection[str]) -> str | None:
    """Why ``plugin`` cannot be registered as written (a misspelt hook, a hook wrapper), or None.

    ``known`` is every declared hook. A hook no loaded plugin declares is no problem (it is kept and
    never called: the declaring plugin may simply not be loaded) unless its name is one or two
    characters from a declared one."""
    for attr in sorted(dir(plugin)):
        if not attr.startswith("crab_"):
            if _marked(plugin, attr):  # pluggy's specname: crab finds implementations by name only
                return (
                    f"its {attr} is marked @crab.hookimpl but not named after a hook, so crab would never "
                    "call it: name it after the hook (crab_tools, …; specname is not read, see docs/hooks.md)"
                )
            continue
        try:
            opts = pm.parse_hookimpl_opts(plugin, attr)
        except Exception:
            opts = None
        if opts is None:
            continue
        hook = opts.get("specname") or attr
        if hook not in known and (near := declared.near_miss(hook, known)) is not None:
            return f"implements unknown hook {attr} (misspelt {near}? see docs/hooks.md)"
        caller = getattr(pm.hook, hook, None)
        spec = caller.spec if caller is not None else None
        extra = sorted(set(required_arguments(getattr(plugin, attr))) - set(spec.argnames)) if spec else []
        if extra:
            hint = " (a class was given: pass an instance of it)" if inspect.isclass(plugin) and "self" in extra else ""
            return f"its {attr} takes {', '.join(extra)}, which the hook does not pass{hint}"
        if opts.get("wrapper") or opts.get("hookwrapper"):
            kind = "wrapper=True" if opts.get("wrapper") else "hookwrapper=True"
            return (
                f"{attr} is a hook wrapper (@hookimpl({kind})), which crab does not call: crab calls each "
                "plugin's hook on its own; make it a plain @crab.hookimpl"
            )
    return None


def required_arguments(function: Callable[..., Any]) -> list[str]:
    """The parameters ``function`` needs a value for (a bound method's ``self`` left out), as pluggy
    counts them, but read here: pluggy's own count leaves out the ``self`` of a class given for an
    instance too, and the line could not say to pass an instance."""
    empty = inspect.Parameter.empty
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # no signature to read: pluggy's own check decides
        return []
    return [p.name for p in parameters if p.kind in positional and p.default is empty]
