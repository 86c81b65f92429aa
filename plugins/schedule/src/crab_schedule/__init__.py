"""crab-schedule: reminders and agent jobs (cron, interval, once) that ``crab serve`` runs and delivers.

Hook implementations only; the logic lives in the modules beside this one, imported when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    from crab import AgentHandle, Channel, Config, ConfigTable, Tool, ToolContext
    from crab.messages import ToolCall

CRAB_API = ">=0.1,<0.2"


class ScheduleHooks:
    """The hook crab-schedule declares: another plugin offers a job store without importing crab-schedule."""

    @crab.hookspec
    def crab_job_stores(self, config: Config) -> list[Any] | None:
        """Job stores this plugin offers to crab-schedule, each a ``crab_jobs_kit.JobStore`` with a ``name``.

        ``[plugins.schedule] store = "<name>"`` picks one (crab-schedule's own is ``sqlite``).
        crab-schedule collects it (``AgentHandle.collect`` in ``crab serve``, ``crab.hooks.collect_hook``
        in its CLI). Return stores that connect on first use (the interface has no ``open``), or
        None. Not first-result. A plugin implementing it loads fine without crab-schedule; its
        implementation is then never called.
        """

    @crab.hookspec
    def crab_job_engines(self, config: Config) -> dict[str, Any] | None:
        """Engines that fire crab-schedule's jobs by their own clock, by the name ``[serve] engine``
        gives them (crab-temporal: ``temporal``, each job a Temporal Schedule): ``{name: make}``,
        ``make(config, firing)`` returning a ``crab_schedule.engines.JobEngine`` and ``firing`` a
        ``crab_schedule.engines.JobFiring``. Under such an engine ``crab serve schedule`` fires no job
        by its own poll: it syncs the store's jobs to the engine and runs each fire the engine hands
        back. None, or no entry for the engine: jobs fire as without one. Not first-result. A plugin
        implementing it loads fine without crab-schedule; its implementation is then never called.
        """


CRAB_HOOKSPECS = ScheduleHooks


@crab.hookimpl
def crab_config_table() -> ConfigTable:
    """``[plugins.schedule]``: see ``crab_schedule.settings.TABLE``."""
    from crab_schedule.settings import TABLE

    return TABLE


@crab.hookimpl
def crab_tools(config: Config) -> list[Tool]:
    from crab_schedule.tools import TOOLS

    return list(TOOLS)


@crab.hookimpl
def crab_channels(config: Config) -> list[Channel]:
    from crab_schedule.runner import build

    return [build(config)]


@crab.hookimpl
def crab_startup(agent: AgentHandle) -> None:
    """Remember the agent so a tool call can read its session's channel and address."""
    from crab_schedule.tools import remember

    remember(agent)


@crab.hookimpl
def crab_shutdown(agent: AgentHandle) -> None:
    from crab_schedule.tools import forget

    forget(agent)


@crab.hookimpl
def crab_before_tool_call(call: ToolCall, tool: Tool, ctx: ToolContext) -> Any:
    """Hold an agent job's tool calls to the permissions of the session that added it (None at
    once in a session no job runs in: no coroutine to make and await)."""
    from crab_schedule.ceiling import decide, mode_for

    return None if mode_for(ctx.session_id) is None else decide(tool, ctx)


@crab.hookimpl
def crab_turn_ceilings(config: Config) -> Any:
    """Under ``[serve] engine`` (crab-temporal declares this hook): an agent job's mode while its
    turn runs, so the workers hold its tool calls to it, as this process's hook above does here."""
    from crab_schedule.ceiling import mode_for

    return mode_for


@crab.hookimpl
def crab_cli(app: Any, config: Config) -> None:
    """``crab schedule add|list|remove|run-now|log`` (the commands import their module when run)."""
    import typer

    schedule = typer.Typer(help="Reminders and agent jobs that `crab serve schedule` runs.", no_args_is_help=True)

    @schedule.command("add")
    def add(
        message: str = typer.Option(None, "--message", help="a reminder: send this text"),
        prompt: str = typer.Option(None, "--prompt", help="an agent job: run this prompt, send the answer"),
        cron: str = typer.Option(None, "--cron", help='cron expression, e.g. "0 9 * * 1-5"'),
        timezone: str = typer.Option(None, "--timezone", help="IANA timezone for --cron and --at (Europe/Berlin)"),
        every: str = typer.Option(None, "--every", help="repeat interval: 30m, 2h, 1d"),
        at: str = typer.Option(None, "--at", help="once, at 2026-12-24T09:00 or HH:MM"),
        after: str = typer.Option(None, "--in", help="once, after 20m, 2h …"),
        name: str = typer.Option("", "--name", help="a short label (at most 80 characters)"),
        timeout: str = typer.Option(
            None, "--timeout", help="agent jobs: longest the turn may run, e.g. 10m (default: job_timeout)"
        ),
        to: str = typer.Option(None, "--to", help="deliver to CHANNEL:ADDRESS (telegram:123) instead of the log"),
        permissions: str = typer.Option(
            None, "--permissions", help="agent jobs: read-only, ask or yolo (default: [crab] permissions)"
        ),
    ) -> None:
        """Add a job: when (--cron/--every/--at/--in) and what (--message or --prompt)."""
        from crab_schedule import cli

        cli.add(
            config,
            {
                "message": message,
                "prompt": prompt,
                "cron": cron,
                "timezone": timezone,
                "every": every,
                "at": at,
                "after": after,
                "name": name,
                "timeout": timeout,
                "to": to,
                "permissions": permissions,
            },
        )

    @schedule.command("list")
    def list_jobs(
        all_jobs: bool = typer.Option(False, "--all", help="include jobs that will not run again"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """List jobs, next run first."""
        from crab_schedule import cli

        cli.list_jobs(config, all_jobs, as_json)

    @schedule.command("remove")
    def remove(job_ids: list[str] = typer.Argument(..., help="job ids")) -> None:
        """Remove jobs so they never run again."""
        from crab_schedule import cli

        cli.remove(config, job_ids)

    @schedule.command("run-now")
    def run_now(job_id: str = typer.Argument(..., help="job id")) -> None:
        """Make a job due now (a running `crab serve schedule` runs it)."""
        from crab_schedule import cli

        cli.run_now(config, job_id)

    @schedule.command("log")
    def log(
        job: str = typer.Option(None, "--job", help="only this job"),
        limit: int = typer.Option(50, "-n", "--limit", min=1, help="how many entries (newest last)"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
    ) -> None:
        """What jobs delivered: terminal jobs' output, every failure, every skipped run."""
        from crab_schedule import cli

        cli.log(config, job, limit, as_json)

    app.add_typer(schedule, name="schedule")
