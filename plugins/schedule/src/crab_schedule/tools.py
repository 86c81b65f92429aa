"""The model's tools: ``schedule_add``, ``schedule_list``, ``schedule_remove``.

They only write to the job store (``crab serve`` runs the jobs), so they work in any process,
``crab run`` included. A job remembers the conversation it came from (the session's
``crab.channel``/``crab.address`` meta, else the terminal: the schedule log) and the session's
permission mode. ``schedule_add`` is an ``exec`` tool: it makes crab act later, so the gate asks
(or refuses where nobody can answer, as in a remote chat without buttons); a model can list and
remove only the jobs of its own conversation.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import crab

from crab_schedule.jobs import Job, Origin

_HANDLES: dict[int, crab.AgentHandle] = {}  # by id(config): the agent a tool call belongs to
MAX_LISTED = 50


def remember(handle: crab.AgentHandle) -> None:
    _HANDLES[id(handle.config)] = handle


def forget(handle: crab.AgentHandle) -> None:
    _HANDLES.pop(id(handle.config), None)


def _store(ctx: crab.ToolContext, settings: Any) -> Any:
    """The configured job store; another plugin's (``crab_job_stores``) is found through this run."""
    from crab_schedule.settings import open_store

    handle = _HANDLES.get(id(ctx.config)) if ctx.config is not None else None
    return open_store(settings, (lambda: handle.collect("crab_job_stores")) if handle else None)


async def origin_of(ctx: crab.ToolContext) -> Origin:
    """Where the calling session's conversation lives: its channel and address, or the terminal."""
    handle = _HANDLES.get(id(ctx.config)) if ctx.config is not None else None
    meta: dict[str, object] = {}
    if handle is not None:
        try:
            meta = dict((await handle.session_info(ctx.session_id)).meta)
        except crab.StoreError:
            meta = {}
    channel, address = meta.get("crab.channel"), meta.get("crab.address")
    if isinstance(channel, str) and isinstance(address, str):
        return Origin("tool", ctx.session_id, channel, address, str(ctx.workspace))
    return Origin("tool", ctx.session_id, None, None, str(ctx.workspace))


def _mine(job: Job, origin: Origin) -> bool:
    return job.origin.destination == origin.destination


@crab.tool(permission="exec", timeout=30)
async def schedule_add(
    mode: Literal["reminder", "agent"],
    text: str,
    ctx: crab.ToolContext,
    cron: str | None = None,
    timezone: str | None = None,
    every: str | None = None,
    at: str | None = None,
    after: str | None = None,
    name: str | None = None,
    timeout: str | None = None,
) -> str:
    """Schedule a reminder or an agent job; its output comes back to this conversation.

    Give exactly one of cron, every, at or after.

    Args:
        mode: reminder sends text as it is; agent runs text as a prompt in this conversation and sends the answer.
        text: The reminder's message, or the agent job's prompt.
        cron: Five-field cron expression, e.g. "0 9 * * 1-5" (09:00 on weekdays), read in timezone.
        timezone: IANA timezone such as Europe/Berlin for cron and at; default the configured one.
        every: Repeat interval such as 30m, 2h or 1d.
        at: One run at this time: ISO 2026-12-24T09:00 (in timezone) or HH:MM (the next one).
        after: One run after this long, such as 20m or 2h.
        name: A short label shown in lists.
        timeout: Agent jobs: longest the turn may run, such as 10m; by default and at most the job_timeout setting.
    """
    from crab_schedule.adding import add_job, local_time
    from crab_schedule.clock import SystemClock
    from crab_schedule.settings import read_settings

    settings = read_settings(ctx.settings)
    store = _store(ctx, settings)
    origin = await origin_of(ctx)
    permissions = str(ctx.config.get("crab.permissions") or "ask") if ctx.config is not None else "ask"
    try:
        job = await add_job(
            store,
            settings,
            now=SystemClock().now(),
            mode=mode,
            text=text,
            origin=origin,
            permissions=permissions,
            cron=cron,
            timezone=timezone,
            every=every,
            at=at,
            after=after,
            name=name or "",
            timeout=timeout,
            longest_timeout=settings.job_timeout,
            redact=crab.secrets.Redactor(crab.secrets.known_secrets(ctx.config)).text,
        )
    except crab.UsageError as exc:
        raise crab.ToolError(str(exc)) from None
    finally:
        await store.close()
    assert job.next_run is not None
    where = "this chat" if origin.channel else "the schedule log (`crab schedule log`)"
    return (
        f"Scheduled job {job.id}: {job.mode}, {job.trigger.describe()}; next run "
        f"{local_time(job.next_run, job.trigger.timezone)}. `crab serve` runs it; its output goes to {where}."
    )


@crab.tool(permission="read", timeout=30)
async def schedule_list(ctx: crab.ToolContext) -> str:
    """List the scheduled jobs of this conversation: id, kind, schedule, next run."""
    from crab_schedule.adding import describe_job
    from crab_schedule.clock import SystemClock
    from crab_schedule.settings import read_settings

    store = _store(ctx, read_settings(ctx.settings))
    origin = await origin_of(ctx)
    try:
        jobs = [job for job in await store.list() if _mine(job, origin)]
    finally:
        await store.close()
    if not jobs:
        return "No scheduled jobs for this conversation."
    now = SystemClock().now()
    lines = [describe_job(job, now) for job in jobs[:MAX_LISTED]]
    if len(jobs) > MAX_LISTED:
        lines.append(f"… and {len(jobs) - MAX_LISTED} more (`crab schedule list` shows all)")
    return "\n".join(lines)


@crab.tool(permission="write", timeout=30)
async def schedule_remove(
    job_id: Annotated[str, "The id schedule_add or schedule_list gave."], ctx: crab.ToolContext
) -> str:
    """Remove a scheduled job of this conversation, so it never runs again."""
    from crab_schedule.settings import read_settings

    store = _store(ctx, read_settings(ctx.settings))
    origin = await origin_of(ctx)
    try:
        job = await store.get(job_id.strip())
        if job is None or job.next_run is None or not _mine(job, origin):
            raise crab.ToolError(f"no scheduled job {job_id!r} in this conversation (schedule_list shows them)")
        await store.remove(job.id)
    finally:
        await store.close()
    return f"Removed job {job.id} ({job.name or job.trigger.describe()})."


TOOLS = [schedule_add, schedule_list, schedule_remove]
