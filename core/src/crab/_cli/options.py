"""``RunOptions``: what the command line asked of a run (``run``, ``chat``, ``serve``), typed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The flags shared by ``crab run``, ``crab chat`` and ``crab serve``; None means "not given".

    ``plugins`` is ``--plugins`` (None: ``CRAB_PLUGINS`` or config decide); ``settings`` are the
    ``--set KEY=VALUE`` items in order; ``session`` and ``continue_latest`` pick the session, and
    so does ``resume`` (``crab chat -r ID``; ``""``: ``-r`` alone, pick one from a list);
    ``worktree`` is ``--worktree [NAME]`` (``""``: no name), for a plugin's ``crab_workspace``.
    """

    plugins: str | None = None
    provider: str | None = None
    model: str | None = None
    yolo: bool = False
    read_only: bool = False
    plan: bool = False
    worktree: str | None = None
    continue_latest: bool = False
    session: str | None = None
    store: str | None = None
    settings: tuple[str, ...] = ()
    renderer: str | None = None
    resume: str | None = None
