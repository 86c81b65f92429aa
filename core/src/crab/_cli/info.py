"""``crab tools`` and ``crab models``: what the loaded plugins offer, and what config left out."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from crab._contracts.tools import Tool
    from crab._host.plugin_host import PluginHost


def _host(plugins: str | None) -> object:
    from crab._assembly.choosing import emit_config_notices
    from crab._assembly.root import assemble_host

    config, host = assemble_host(plugins=plugins)
    emit_config_notices(config, lambda line, _level: typer.echo(f"warning: {line}", err=True))
    return host


def list_tools(plugins: str | None, as_json: bool) -> None:
    """The loaded tools, then (on stderr) one line per plugin failure, so none is left out silently."""
    from crab._host.plugin_host import PluginHost

    host = _host(plugins)
    assert isinstance(host, PluginHost)
    tools = host.registry("tools")
    for failure in host.failures:
        typer.echo(f"warning: {failure.line}", err=True)
    if as_json:
        rows = [
            {
                "name": t.name,
                "plugin": t.plugin,
                "permission": t.permission,
                "description": t.description,
                "parameters": t.parameters,
            }
            for t in tools.values()
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    if not tools:
        typer.echo("no tools loaded (pip install crab-tools-basic; see `crab plugins list`)")
        return
    from crab._builtin.tool_view import one_line

    width = max(len(n) for n in tools)
    for name, tool in sorted(tools.items()):
        first = one_line(tool.description)  # the line the progressive view gives the model
        typer.echo(f"{name:<{width}}  {tool.permission:<7}  {tool.plugin:<14}  {first}")


class _NoModel:
    """The provider of an agent that only starts and stops (no model is called)."""

    name = "none"

    def models(self) -> list[Any]:
        return []

    def check(self, model: str) -> None:
        from crab._contracts.errors import ConfigError

        raise ConfigError("this agent lists tools only; it calls no model")

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        self.check(request.model)
        yield  # pragma: no cover - unreachable, makes this an async generator


def started_tools(host: PluginHost) -> dict[str, Tool]:
    """Every tool a run's requests carry: ``crab_tools``' and those ``crab_startup`` adds (an MCP
    server's, ``AgentHandle.add_tools``). Starts an agent without a model on the memory store,
    then shuts it down (servers stop); its warnings, and every plugin failure, go to stderr once."""
    import asyncio
    from pathlib import Path

    from crab._builtin.memory_store import MemoryStore
    from crab._contracts.events import Event, NoticeEvent
    from crab._loop.agent import Agent

    for failure in host.failures:
        typer.echo(f"warning: {failure.line}", err=True)

    def show(event: Event) -> None:
        if isinstance(event, NoticeEvent) and event.level == "warning":
            typer.echo(f"warning: {event.message}", err=True)

    store = MemoryStore()
    agent = Agent(host, host.config, store=store, provider=_NoModel(), model="", workspace=Path.cwd(), local=False)
    agent.subscribe(show)

    async def run() -> dict[str, Tool]:
        await agent.start()
        try:
            return dict(agent.tools)
        finally:
            await agent.close()

    return asyncio.run(run())


def tool_tokens(plugins: str | None, as_json: bool) -> None:
    """Estimated tokens of the tool schemas a request carries: every full schema (``tool_view =
    "full"``) against the progressive view's stubs (one line, parameter names and types); either
    list is the same on every request. Tools added at start-up count too (``started_tools``)."""
    from crab._builtin.tool_view import stub
    from crab._host.plugin_host import PluginHost
    from crab._values.budget import schema_tokens

    host = _host(plugins)
    assert isinstance(host, PluginHost)
    tools = started_tools(host)
    rows: list[dict[str, Any]] = [
        {"name": t.name, "full": schema_tokens([t.spec()]), "stub": schema_tokens([stub(t)])} for t in tools.values()
    ]
    full = schema_tokens([t.spec() for t in tools.values()])
    progressive = schema_tokens([stub(t) for t in tools.values()])
    saving = 1 - progressive / full if full else 0.0
    view = host.config.get("crab.tool_view", "progressive")
    prompt = prompt_tokens(host)
    first = prompt + (progressive if view == "progressive" else full)
    if as_json:
        totals = {"full": full, "progressive": progressive, "saving": round(saving, 4), "tool_view": view}
        totals |= {"system_prompt": prompt, "first_request": first}
        typer.echo(json.dumps({"tools": rows, "total": totals}, indent=2))
        return
    if not rows:
        typer.echo("no tools loaded (pip install crab-tools-basic; see `crab plugins list`)")
        return
    width = max(len(r["name"]) for r in [*rows, {"name": "total"}])
    typer.echo(f"{'tool':<{width}}  {'full':>6}  {'stub':>6}")
    for r in sorted(rows, key=lambda r: -r["full"]):
        typer.echo(f"{r['name']:<{width}}  {r['full']:>6}  {r['stub']:>6}")
    typer.echo(f"{'total':<{width}}  {full:>6}  {progressive:>6}")
    typer.echo(
        f"estimated schema tokens per request: {full} full, {progressive} progressive ({saving:.0%} fewer); "
        f"either list is the same on every request (tool_view = {view})"
    )
    typer.echo(f"system prompt here: {prompt} tokens; first request (prompt and tool list): {first} tokens")


def prompt_tokens(host: PluginHost) -> int:
    """Estimated tokens of a new session's system prompt in this folder: every plugin's part (the
    instruction files found here included) and ``[crab] system_prompt_append``, as ``Agent`` joins them."""
    from pathlib import Path

    from crab._values.budget import raw_tokens

    parts = host.dispatch.system_prompt(workspace=Path.cwd(), session_id="", config=host.config)
    appended = host.config.get("crab.system_prompt_append")
    if isinstance(appended, str) and appended.strip():
        parts.append(appended.strip())
    return raw_tokens(len("\n\n".join(parts)))


def list_models(plugins: str | None, as_json: bool) -> None:
    from crab._host.plugin_host import PluginHost

    host = _host(plugins)
    assert isinstance(host, PluginHost)
    host.collect_all()
    for failure in host.failures:
        typer.echo(f"warning: {failure.line}", err=True)
    rows = []
    for provider in host.registry("providers").values():
        try:
            models = provider.models()
        except Exception as exc:
            typer.echo(f"{provider.name}: could not list models: {exc}", err=True)
            continue
        for model in models:
            rows.append(
                {
                    "id": f"{provider.name}/{model.id}",
                    "provider": provider.name,
                    "model": model.id,
                    "context_window": model.context_window,
                    "max_output_tokens": model.max_output_tokens,
                    "input_price": model.input_price,
                    "output_price": model.output_price,
                }
            )
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no models: no provider plugin is loaded (pip install crab-provider-openai)")
        return
    width = max(len(r["id"]) for r in rows)
    typer.echo(f"{'model':<{width}}  {'context':>9}  {'$/M in':>8}  {'$/M out':>8}")
    for r in rows:
        context = f"{r['context_window']:,}" if r["context_window"] else "?"
        price_in = f"{r['input_price']:g}" if r["input_price"] is not None else "-"
        price_out = f"{r['output_price']:g}" if r["output_price"] is not None else "-"
        typer.echo(f"{r['id']:<{width}}  {context:>9}  {price_in:>8}  {price_out:>8}")
