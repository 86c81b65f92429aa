"""The workspace seatbelt: turn a path the model sent into a real path inside the allowed roots.

Roots are the session's workspace plus any ``extra_roots`` from config. A path that leaves them
(absolute elsewhere, ``..``, or a symlink pointing out) is refused, and so is crab's own folder
(``$CRAB_HOME``) wherever it lies, but for this session's bash logs. This guards against a
confused model, not an attacker: ``bash`` can still reach anything the user can.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from crab import ConfigError, ToolContext, ToolError
from crab.config import crab_home

from crab_tools_basic.bash_log import session_folder
from crab_tools_basic.settings import LOGS_IN_HOME, Settings, load_settings
from crab_tools_basic.walk import private_folder


@dataclass(frozen=True, slots=True)
class Workspace:
    """The folders a tool may touch: ``root`` (the session's workspace) first, then the extras."""

    root: Path
    extra_roots: tuple[Path, ...] = ()
    read_only_roots: tuple[Path, ...] = ()
    private: str | None = None
    """crab's own folder as a real path, when the caller has just looked it up (None: look it up)."""

    @property
    def writable(self) -> tuple[Path, ...]:
        return (self.root, *self.extra_roots)

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """The real absolute path for ``path`` (relative to the workspace), or a ``ToolError``.

        Symlinks are resolved before the check, so a link inside the workspace that points out
        is refused like the absolute path it stands for.
        """
        if not path or not path.strip():
            raise ToolError("path is empty: give a path relative to the workspace")
        if "\0" in path:
            raise ToolError("path contains a NUL byte")
        given = Path(path).expanduser()
        candidate = given if given.is_absolute() else self.root / given
        try:
            real = Path(os.path.realpath(candidate))
        except OSError as exc:  # a link replaced between realpath's lstat and readlink
            raise ToolError(f"{path} cannot be resolved ({exc.strerror or exc}); try again") from None
        self._refuse_private(path, real)
        roots: Sequence[Path] = self.writable if write else (*self.writable, *self.read_only_roots)
        if any(within(real, root) for root in roots):
            return real
        if write and any(within(real, root) for root in self.read_only_roots):
            raise ToolError(f"{path} is in a read-only folder; write inside the workspace {self.root}")
        raise ToolError(
            f"{path} resolves to {real}, outside the workspace {self.root}; "
            "use a path inside it (or add the folder to [plugins.tools-basic] extra_roots)"
        )

    def _refuse_private(self, path: str, real: Path) -> None:
        """crab's own folder is off limits even inside the workspace (crab run in ``~``), except
        this session's bash logs; unless the user works inside that folder on purpose."""
        home = Path(self.private if self.private is not None else private_folder())
        if not within(real, home) or within(self.root, home):
            return
        if any(within(real, r) for r in self.read_only_roots):
            return
        raise ToolError(
            f"{path} is inside crab's own folder {home} (keys, trusted projects, sessions); the tools do not "
            "read or write there"
        )

    def scope_of(self, real: Path) -> Path:
        """The root ``real`` lies in (the innermost, if roots nest): where .gitignore lookup stops."""
        roots = [r for r in (*self.writable, *self.read_only_roots) if within(real, r)]
        # Of two roots that both hold ``real``, the inner one's text is the longer.
        return max(roots, key=lambda r: len(str(r))) if roots else real

    def display_prefix(self, scope: Path) -> str:
        """What to put before a path relative to ``scope`` so it reads as ``display`` would show it.

        Walks build names as prefix + relative path: a ``Path`` per file would dominate a search.
        """
        shown = self.display(scope)
        return "" if shown == "." else shown + "/"

    def display(self, real: Path) -> str:
        """``real`` as the model should see it: relative to the workspace when inside it."""
        text, root = str(real), str(self.root)
        if text == root:
            return "."
        if within(real, self.root):
            return text[len(root.rstrip("/")) + 1 :]
        return real.as_posix()


def realpath_below(base: str, names: Sequence[str]) -> str:
    """``os.path.realpath(base/names...)`` for a ``base`` that is a real path and ``names`` that
    are plain names (no ``..``, ``.`` or empty one), without looking at ``base``'s own folders again.

    realpath resolves a path one component at a time from ``/``; a real ``base`` has no symlink
    left in it, so the walk starts below it. At the first symlink the rest goes to realpath
    itself; from the first name that does not exist on, names are kept as written (as realpath's
    non-strict mode does).
    """
    path = base
    for index, name in enumerate(names):
        candidate = os.path.join(path, name)
        try:
            info = os.lstat(candidate)
        except OSError:
            return os.path.join(candidate, *names[index + 1 :])
        if stat.S_ISLNK(info.st_mode):
            return os.path.realpath(os.path.join(candidate, *names[index + 1 :]))
        path = candidate
    return path


def within(path: Path, root: Path) -> bool:
    """``path == root or path.is_relative_to(root)`` for the absolute, normalized paths here
    (from ``realpath`` and ``resolve``), by their text: pathlib's own test costs ~10 µs a root,
    several times a call."""
    text, base = str(path), str(root)
    return text == base or text.startswith(base if base.endswith("/") else base + "/")


def settings_of(ctx: ToolContext) -> Settings:
    """This call's settings; a bad config table becomes an error result, not a crash."""
    try:
        return load_settings(ctx.settings, ctx.workspace)
    except ConfigError as exc:
        raise ToolError(str(exc)) from None


def workspace_of(ctx: ToolContext, settings: Settings | None = None) -> Workspace:
    """The seatbelt for this call; this session's bash logs are readable so the model can page
    through them (another session's are not: they may hold another workspace's output)."""
    settings = settings or settings_of(ctx)
    root = Path(os.path.realpath(ctx.workspace))
    home = crab_home()  # once a call: the logs' default folder and the private folder both need it
    private = os.path.realpath(home)
    if settings.output_dir is None:  # the default, inside crab's folder: resolved from its real path
        logs = realpath_below(private, (*LOGS_IN_HOME, session_folder(Path(), ctx.session_id).name))
    else:
        logs = os.path.realpath(session_folder(settings.output_dir, ctx.session_id))
    return Workspace(root=root, extra_roots=settings.extra_roots, read_only_roots=(Path(logs),), private=private)
