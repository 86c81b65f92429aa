"""Finding, loading and isolating the plugins a run chose (``crab._assembly.plugin_choice``), each
with its status, and the registries built from their hooks (docs/architecture.md#the-dispatcher, docs/plugins.md)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import pluggy

from crab._config import environ
from crab._host import declared, hookspecs
from crab._host.api_version import api_problem
from crab._host.dispatch import Dispatcher, Failure, describe

if TYPE_CHECKING:
    from crab._contracts.config import Config
    from crab._host.clashes import Rank
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
KINDS: tuple[Kind, ...] = ("tools", "providers", "stores", "renderers", "commands", "channels")


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
    """Owns the pluggy manager, every plugin's status and the registries built from hooks.

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
        self._order: dict[str, int] = {}
        self._late: set[str] = set()
        """Names of the tools ``add_tools`` added (``_place_late`` keeps their order canonical)."""
        self._ranks: dict[str, Rank] = {}
        """Plugin → how it came to its place in load order (``crab._host.clashes``); none: installed only."""
        self.dispatch = Dispatcher(self.pm, self._order, self.fail, self.fault, strict=self.strict)
        self.declarers: dict[str, str] = dict.fromkeys(self.dispatch.policies, "core")
        """Hook → who declares it: ``core`` or ``plugin NAME``."""
        self._contributions: dict[Kind, dict[str, list[Any]]] = {k: {} for k in KINDS}
        self.unread_source = ""
        """Who chose no installed plugin when no metadata was read for it (a program's ``plugins=[]``):
        an error about a missing store or provider reads it then (``crab._assembly.not_loaded``)."""
        self._collected = False
        self._registries: dict[Kind, dict[str, Any]] = {}

    # --- loading --------------------------------------------------------------------------

    def add_builtin(self, name: str, plugin: object) -> None:
        """Register one of core's own plugins (always on, listed as ``builtin``)."""
        from crab._host.clashes import CORE, Rank  # only runs that build registries need it (--help does not)

        self.dispatch.core.add(name)
        self._ranks.setdefault(name, Rank(CORE))
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
            from crab._host.clashes import LISTED, Rank

            for name in chosen:
                self._ranks.setdefault(name, Rank(LISTED, source))
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
        program gave them, so they win a name clash with an installed plugin (``crab._host.clashes``)."""
        from crab._host.clashes import PROGRAM, Rank

        for name in plugins:
            self._ranks.setdefault(name, Rank(PROGRAM))
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
        self._order[name] = len(self._order)
        record.hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])
        self._collected = False  # a plugin added after the registries were built: collect again
        self._registries.clear()
        self.dispatch.invalidate()

    def _fail(self, record: PluginRecord, reason: str) -> None:
        record.status = "failed"
        record.reason = reason
        self.records[record.name] = record
        plugin = self.pm.get_plugin(record.name)
        if plugin is not None:
            self.pm.unregister(plugin, name=record.name)
        self._order.pop(record.name, None)
        for contributions in self._contributions.values():
            contributions.pop(record.name, None)
        self._registries.clear()
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

    # --- registries -----------------------------------------------------------------------

    def collect_all(self) -> None:
        """Run every registration hook (once), so statuses and conflicts are known before use.

        All kinds are collected before any registry is built, so a plugin that fails in one
        registration hook has none of its contributions used anywhere in the run.
        """
        if self._collected:
            return
        self._collected = True
        for kind in KINDS:
            self._collect(kind)
        for kind in KINDS:
            self.registry(kind)

    def _collect(self, kind: Kind) -> None:
        expected = expected_type(kind)
        hook = f"crab_{kind}"
        contributions: dict[str, list[Any]] = {}
        for name, result in self.dispatch.collect(hook, config=self.config):
            if result is None:
                continue
            if not isinstance(result, list | tuple):
                self.fail(name, f"{hook} returned {type(result).__name__}, expected a list of {expected.__name__}")
                continue
            bad = [item for item in result if not isinstance(item, expected)]
            if bad:
                self.fail(name, f"{hook} returned a {type(bad[0]).__name__} in its list, expected {expected.__name__}")
                continue
            contributions[name] = [tag_with_plugin(item, name) for item in result]
        self._contributions[kind] = {n: c for n, c in contributions.items() if n in self._order}

    def registry(self, kind: Kind) -> dict[str, Any]:
        """Name → object for one kind (same names: see ``_build``)."""
        self.collect_all()
        if kind not in self._registries:
            self._registries[kind] = self._build(kind)
        return self._registries[kind]

    def _build(self, kind: Kind) -> dict[str, Any]:
        """Name → item; a name two plugins offer is settled by ``crab._host.clashes`` (never by
        which one sorts first), each item left out reported once as a fault of its plugin."""
        from crab._host.clashes import build_registry

        order = [n for n in sorted(self._contributions[kind], key=lambda n: self._order.get(n, 0)) if n in self._order]
        table, faults = build_registry(kind, self._contributions[kind], order, self._ranks, self._crab_own)
        for fault in faults:
            self.fault(fault.plugins[0], fault.reason, *fault.plugins[1:])  # one line for all who lost it
        return table

    def _crab_own(self, plugin: str) -> bool:
        """Whether ``plugin`` comes from one of crab's own distributions (asked only when two
        plugins loaded because they are installed register one name)."""
        from crab._host.entry_points import crab_own

        record = self.records.get(plugin)
        return record is not None and record.distribution is not None and crab_own(record.distribution)

    def add_tools(self, plugin: str, tools: Sequence[Any]) -> list[str]:
        """Add tools that ``plugin`` learned of after start-up (MCP servers, say) to the live registry.

        Each is tagged with ``plugin`` as if ``crab_tools`` had returned it. A name already taken
        is left out and reported once as a fault of ``plugin`` (as ``_build`` does); nothing is
        added for a plugin that is not loaded or has failed. Returns the names added.
        """
        from crab._contracts.tools import Tool

        record = self.records.get(plugin)
        if plugin not in self._order or record is None or record.status == "failed":
            return []
        table = self.registry("tools")
        added: list[str] = []
        for item in tools:
            if not isinstance(item, Tool):
                self.fault(plugin, f"add_tools was given a {type(item).__name__}, expected a Tool")
                continue
            if item.name in table:
                owner = table[item.name].plugin or "another plugin"
                self.fault(plugin, f"its tool {item.name!r} was left out because {owner!r} registers one of that name")
                continue
            table[item.name] = tag_with_plugin(item, plugin)
            added.append(item.name)
        if added:
            self._place_late(table, added)
        return added

    def _place_late(self, table: dict[str, Any], added: Sequence[str]) -> None:
        """Keep the tools added after start-up last, in plugin order, then by name: in the order of
        the request's tools array, which providers cache. When they joined (a server ready at once in
        one process, late in the next; servers that answer in another order) then changes nothing."""
        self._late.update(added)
        late = sorted((n for n in table if n in self._late), key=lambda n: (self._order.get(table[n].plugin, 0), n))
        for name in late:  # in place: the agent holds this very dict
            table[name] = table.pop(name)

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


def expected_type(kind: Kind) -> type:
    """The class (or runtime-checkable protocol) a registration hook's items must be."""
    from crab._contracts import channels, commands, providers, renderers, storage, tools

    found: dict[Kind, type] = {"tools": tools.Tool, "providers": providers.Provider, "stores": storage.Store}
    found |= {"renderers": renderers.RendererSpec, "commands": commands.Command, "channels": channels.Channel}
    return found[kind]


def tag_with_plugin(item: Any, plugin: str) -> Any:
    """Record which plugin registered ``item`` (a copy for frozen dataclasses)."""
    if hasattr(item, "__dataclass_fields__") and "plugin" in item.__dataclass_fields__:
        try:
            item.plugin = plugin
        except (AttributeError, TypeError):
            return replace(item, plugin=plugin)
    return item
