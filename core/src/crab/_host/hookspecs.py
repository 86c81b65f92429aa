"""Every hook core declares: each docstring is that hook's documentation (docs/hooks.md) and each
mark, the ``crab.hookspec`` plugins use too, its category and failure policy (the dispatcher reads
them from here). Registration hooks are called once per run. No logic here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

from crab._host.declared import PROJECT as PROJECT
from crab._host.declared import hookspec

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from crab._contracts.channels import Channel
    from crab._contracts.commands import Command
    from crab._contracts.config import Config, ConfigTable
    from crab._contracts.events import Event
    from crab._contracts.handle import AgentHandle
    from crab._contracts.interception import Answer, Decision, Deny, PermissionRequest
    from crab._contracts.messages import ToolCall, UserMessage
    from crab._contracts.providers import ModelRequest, Provider
    from crab._contracts.renderers import RendererSpec
    from crab._contracts.storage import Store
    from crab._contracts.tools import Tool, ToolContext, ToolResult

hookimpl = pluggy.HookimplMarker(PROJECT)


# --- registration -------------------------------------------------------------------------


@hookspec(category="registration", on_failure="fail-plugin")
def crab_config_table() -> ConfigTable | None:
    """Declare this plugin's ``[plugins.<name>]`` config table: a ``crab.ConfigTable`` of ``crab.Setting``.

    Called once after plugins load, before any other registration hook. ``name`` must be the
    plugin's name. Core checks the table from every layer (one line naming the file, key, what was
    expected and what was found; exit 2 before anything runs), drops ``trust_only`` keys that an
    untrusted project config set, and fills defaults: ``config.plugin_settings(name)`` then returns
    the checked values. Unknown keys are a one-line warning. Return None to declare nothing.
    """


@hookspec(category="registration", on_failure="fail-plugin")
def crab_tools(config: Config) -> list[Tool]:
    """Tools this plugin offers.

    Called once per run after plugins load. Return a list of ``crab.Tool`` (``@crab.tool``
    makes them). A name another plugin also registers is settled by ``override=True``, by crab's
    or the program's own tool, or by the user's plugin order; with none of those it is left out
    for both, with one line naming both plugins (``crab._assembly.registries``). Not first-result: every
    plugin's lists are joined.
    """


@hookspec(category="registration", on_failure="fail-plugin")
def crab_providers(config: Config) -> list[Provider]:
    """Model back-ends this plugin offers, each a ``crab.Provider`` with a unique ``name``.

    Construction must be cheap (no network, no heavy imports); checks happen in
    ``Provider.check``. Not first-result.
    """


@hookspec(category="registration", on_failure="fail-plugin")
def crab_stores(config: Config) -> list[Store]:
    """Session stores this plugin offers, each a ``crab.Store`` with a unique ``name``.

    ``[crab] store = "<name>"`` picks one; core's in-memory store is called ``memory``. The
    chosen store's ``open`` is awaited before use. Not first-result.
    """


@hookspec(category="registration", on_failure="fail-plugin")
def crab_renderers(config: Config) -> list[RendererSpec]:
    """Renderers this plugin offers (``crab.rendering.RendererSpec``); ``[crab] renderer`` picks one.

    Core offers ``plain`` and ``jsonl``. Not first-result.
    """


@hookspec(category="registration", on_failure="fail-plugin")
def crab_commands(config: Config) -> list[Command]:
    """Router commands (``/name args``) this plugin offers, each a ``crab.Command``.

    Core offers /help /tools /plugins /session /handoff /compact /fork /abort /quit. Not first-result.
    """


@hookspec(category="registration", on_failure="fail-plugin")
def crab_channels(config: Config) -> list[Channel]:
    """Channels (long-running input sources such as a chat bot) this plugin offers.

    ``crab serve NAME`` runs one. Not first-result.
    """


@hookspec(category="registration", on_failure="fail-plugin")
def crab_cli(app: Any, config: Config) -> None:
    """Add sub-commands to the ``crab`` command line.

    ``app`` is the root ``typer.Typer``; call ``app.command()`` or ``app.add_typer()`` on it.
    Called for every CLI invocation but ``plugins``, ``doctor``, ``config``, ``run``, ``chat`` and
    ``serve``, so import heavy modules inside the command functions.
    """


@hookspec(category="observation", on_failure="drop")
def crab_doctor(config: Config) -> list[tuple[str, str]] | None:
    """Lines ``crab doctor`` shows for this plugin: ``(status, text)`` pairs, status ``"ok"``,
    ``"note"`` or ``"fail"`` (a ``fail`` makes doctor exit 1).

    Say whether what the plugin needs works here (a sandbox, a server, a key) and how to fix it
    when not; keep it quick (doctor runs every plugin's). Not first-result.
    """


@hookspec(category="registration", on_failure="fail-plugin")
def crab_workspace(workspace: Path, request: str | None, config: Config) -> Path | None:
    """Choose the folder a run works in, before its agent and any session exist.

    ``workspace`` is the folder crab was started in; ``request`` is what the user asked for on
    the command line with ``--worktree [NAME]`` (``""``: no name given) or None when they did not.
    Return a folder to work there instead (crab-worktree: a fresh git worktree), or None. The
    first folder returned wins; the agent's tools, sessions, checkpoints and sandbox then use it.
    When ``request`` is not None and no plugin returns a folder, or when a plugin fails here (asked
    or not: its settings may put every run elsewhere), the run stops with a usage error (it never
    works in the folder the user asked to keep out of). Not first-result.
    """


@hookspec(category="registration", on_failure="fail-plugin")
def crab_turn_engines(config: Config) -> Mapping[str, Any] | None:
    """Engines that run a turn somewhere other than in this process, by name (``crab run --engine
    NAME``): ``{"name": engine}``.

    An engine is an async function ``engine(session, prompt, config)``: ``session`` a
    ``crab.steps.TurnSteps`` of the session the run continues (or of a new one), ``prompt`` the
    user's text, ``config`` the run's ``crab.Config``. It runs the turn (``crab.steps.TurnMachine``
    deciding, each step carried out by ``TurnSteps.carry_out`` wherever the engine runs it), shows
    it with ``session.emit`` (``TurnStarted`` first, ``TurnEnded`` last, the events in between as a
    turn in this process shows them), and returns a ``crab.steps.TurnOutcome``; a ``crab.CrabError`` it
    raises is the run's one line. Collected by ``crab run --engine`` and by ``crab serve`` when
    ``[serve] engine`` names one: every turn its channels start runs on it, ``session`` being the
    channel's live session (its ``steering()`` the inputs sent to steer the running turn; the engine
    hands them to its turn and says how many it took with ``took_steering(n)``; abort cancels the
    engine's call). A name two plugins offer is the first's. Not first-result.
    """


# --- context ------------------------------------------------------------------------------


@hookspec(category="context", on_failure="drop")
def crab_system_prompt(workspace: Path, session_id: str, config: Config) -> str | list[str] | None:
    """Parts of the system prompt for the model calls of a session.

    Called once per live session, before its first model call (and again after a compaction
    changes the summary, and in each process that resumes it); return text, a list of texts, or
    None. Parts are joined
    with blank lines in plugin order. Core's part comes first: the default prompt
    (``crab/_builtin/system_prompt.md``: the tool protocol, which plugins add to and never replace) and
    the instruction files (``$CRAB_HOME/AGENTS.md``, then AGENTS.md or CLAUDE.md of each folder
    from the repository root down to the workspace). ``[crab] system_prompt_append`` and a
    handoff or compaction summary follow every plugin's parts. Not first-result.
    """


@hookspec(category="context", on_failure="drop")
def crab_completions(agent: AgentHandle, word: str) -> list[tuple[str, str]] | None:
    """Tab completions for ``word``, the word being typed at ``crab chat``'s live input (the text
    from the last blank to the cursor, such as ``@tiny:ti``).

    Return ``(text, description)`` pairs, ``text`` replacing ``word`` and ``description`` one
    short line for the menu, or None when the word is not yours. Called on a keystroke, in the
    event loop: answer at once from what the plugin already holds, never from the network or a
    disk walk (start a refresh in the background if need be). Core masks every secret it knows in
    both, keeps the first ``MAX_COMPLETIONS`` (50) of all plugins' pairs, and drops a text offered
    twice. A hook that raises or returns the wrong type is dropped for the run (typing goes on
    without it).
    """


# --- interception -------------------------------------------------------------------------


@hookspec(category="interception", on_failure="refuse", awaitable=True)
def crab_before_model_call(request: ModelRequest, session_id: str) -> ModelRequest | None:
    """See (and maybe change) a request before it goes to the provider.

    Return a new ``ModelRequest`` to replace it, or None to leave it. Each plugin sees the
    request as the previous one left it. A hook that raises refuses the model call (fail
    closed). May be awaitable.
    """


@hookspec(category="interception", on_failure="refuse", awaitable=True)
def crab_before_tool_call(call: ToolCall, tool: Tool, ctx: ToolContext) -> Decision | None:
    """Allow, refuse or rewrite a tool call before it runs.

    Return ``crab.hooks.Deny(reason)`` to refuse (the model receives the reason as an error result),
    ``crab.hooks.Replace(arguments)`` to change the arguments, or None / ``crab.hooks.Allow()`` to pass.
    The first Deny wins. The permission gate is an implementation of this hook. A hook that
    raises refuses the call (fail closed). May be awaitable.
    """


@hookspec(category="interception", on_failure="refuse", awaitable=True)
def crab_after_tool_call(call: ToolCall, tool: Tool, result: ToolResult, ctx: ToolContext) -> ToolResult | None:
    """See (and maybe replace) a tool's result before it is recorded and sent to the model.

    Return a new ``ToolResult`` to replace it, or None. A hook that raises withholds the result
    (fail closed). May be awaitable.
    """


@hookspec(category="interception", on_failure="refuse", awaitable=True)
def crab_permission_request(request: PermissionRequest, session_id: str, workspace: Path) -> Answer | None:
    """Someone is about to be asked ``request`` (the permission gate's question about a tool call,
    or another permission question a tool asks through ``ctx.ask``): answer it in their stead, or
    let them be asked.

    Called only where someone could be asked (``ctx.ask`` is not None), before the question is
    shown. Return ``"deny"`` to refuse, ``"once"`` to allow this one call, or None to let the user
    be asked as usual; ``"always"`` is the user's own word and is read as ``"once"``. The first
    answer wins. Answering ``"once"`` approves a call the user would have been asked about: answer
    only what the user configured (crab-hooks runs the user's own ``PermissionRequest`` hooks). A
    hook that raises or returns another value refuses (fail closed). May be awaitable.
    """


@hookspec(category="interception", on_failure="refuse", awaitable=True)
def crab_prompt_submit(
    prompt: str, session_id: str, workspace: Path, config: Config
) -> Deny | str | UserMessage | None:
    """See a user's prompt before it is recorded and sent: refuse it, or add context to it.

    Called for each input that goes to the model (not for router commands or ``!shell``): the
    one that starts a turn and each one that steers a running turn. Return ``crab.hooks.Deny(reason)``
    to refuse it (it is not recorded and the model never sees it; the user gets the reason as
    the turn's error), text to add as context (recorded right after the prompt, as a user message
    of its own), a ``crab.messages.UserMessage`` for context with images (each image held to ``[crab]
    max_image_bytes``; one over it is left out with a note in the text), or None. The first Deny
    wins; the context of several plugins is each recorded. ``config`` is the agent's, and None in
    a child agent's turn (``run_child``: its prompt is the model's, not the user's). A
    hook that raises refuses the prompt (fail closed). May be awaitable.
    """


@hookspec(category="context", on_failure="drop", awaitable=True)
def crab_turn_end(session_id: str, workspace: Path, text: str, continued: int) -> str | None:
    """The model gave its final answer: let the turn end, or keep it going.

    Called for each final answer (a reply without tool calls), not after an abort, an error, a
    loop-guard stop or the iteration cap. ``text`` is the answer; ``continued`` counts how often
    this turn already went on because of this hook (check it so as not to loop). Return text to
    go on: it is recorded as a user message and the model is called again, within ``[crab]
    max_iterations``; None lets the turn end. The texts of several plugins are joined. A hook
    that raises is dropped for the run (the turn ends). May be awaitable.
    """


# --- observation --------------------------------------------------------------------------


@hookspec(category="observation", on_failure="drop")
def crab_event(event: Event, session_id: str) -> None:
    """Every event the loop emits (see ``crab._contracts.events``), in order, for loggers and metrics.

    Must be quick and synchronous: it runs inline in the loop. An implementation that raises is
    reported once and not called again in this run (the plugin's other hooks keep working).
    Renderers are not hooks; they are attached by channels.
    """


# --- lifecycle ----------------------------------------------------------------------------


@hookspec(category="lifecycle", on_failure="fail-plugin", awaitable=True)
def crab_startup(agent: AgentHandle) -> None:
    """The agent is built and about to take input: open connections, start services.

    ``agent`` is the narrow ``crab.AgentHandle``: a Protocol naming every member a plugin may use
    (there is no other way to the ``Agent``). May be awaitable. A plugin that raises is marked
    failed and unregistered.
    """


@hookspec(category="lifecycle", on_failure="drop", awaitable=True)
def crab_session_end(agent: AgentHandle, session_id: str, reason: str) -> None:
    """The agent has left session ``session_id``: end what the plugin keeps running for it (its
    processes, its per-session state). ``reason`` is ``"switch"`` when a channel moved on to
    another session (``/new``, ``/clear``, ``/resume``, ``/fork``), ``"child"`` when a child
    session's turn ended (``AgentHandle.run_child``: a subagent's), ``"end"`` when a channel is
    done with it (``AgentHandle.end_session``: crab-http's one-off request), or ``"shutdown"``
    for each session still open when the agent closes (before ``crab_shutdown``).

    The session stays in the store; a later resume is a new live session. May be awaitable.
    Failures are reported, never raised (that implementation is not called again in this run).
    """


@hookspec(category="lifecycle", on_failure="drop", awaitable=True)
def crab_shutdown(agent: AgentHandle) -> None:
    """The agent is closing: close connections, stop services. May be awaitable. ``agent`` is
    the narrow ``crab.AgentHandle``, as in ``crab_startup``.

    Called even after errors; failures are reported, never raised.
    """
