"""``crab tools`` and ``crab models``: what the loaded plugins offer."""

from __future__ import annotations

import json

import typer

from crab import environ


def _host(plugins: str | None) -> object:
    from crab.cli.runtime import build_host, load_cli_config

    config = load_cli_config()
    return build_host(config, plugins if plugins is not None else environ.plugin_list())


def list_tools(plugins: str | None, as_json: bool) -> None:
    from crab.plugins import PluginHost

    host = _host(plugins)
    assert isinstance(host, PluginHost)
    tools = host.registry("tools")
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
    width = max(len(n) for n in tools)
    for name, tool in sorted(tools.items()):
        first = tool.description.strip().splitlines()[0]
        typer.echo(f"{name:<{width}}  {tool.permission:<7}  {tool.plugin:<14}  {first}")


def list_models(plugins: str | None, as_json: bool) -> None:
    from crab.plugins import PluginHost

    host = _host(plugins)
    assert isinstance(host, PluginHost)
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
