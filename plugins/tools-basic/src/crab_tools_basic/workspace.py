"""The workspace seatbelt: turn a path the model sent into a real path inside the allowed roots.

Roots are the session's workspace plus any ``extra_roots`` from config. A path that leaves them
(absolute elsewhere, ``..``, or a symlink pointing out) is refused, and so is crab's own folder
(``$CRAB_HOME``) wherever it lies, but for this session's bash logs. This guards against a
confused model, not an attacker: ``bash`` can still reach anything the user can.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from crab import ConfigError, ToolContext, ToolError

from crab_tools_basic.bash_log import session_folder
from crab_tools_basic.settings import Settings, load_settings
from crab_tools_basic.walk import private_folder


@dataclass(frozen=True, slots=True)
class Workspace:
    """The folders a tool may touch: ``root`` (the session's workspace) first, then the extras."""

    root: Path
    extra_roots: tuple[Path, ...] = ()
    read_only_roots: tuple[Path, ...] = ()

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
        if any(real == root or real.is_relative_to(root) for root in roots):
            return real
        if write and any(real == root or real.is_relative_to(root) for root in self.read_only_roots):
            raise ToolError(f"{path} is in a read-only folder; write inside the workspace {self.root}")
        raise ToolError(
            f"{path} resolves to {real}, outside the workspace {self.root}; "
            "use a path inside it (or add the folder to [plugins.tools-basic] extra_roots)"
        )

    def _refuse_private(self, path: str, real: Path) -> None:
        """crab's own folder is off limits even inside the workspace (crab run in ``~``), except
        this session's bash logs; unless the user works inside that folder on purpose."""
        home = Path(private_folder())
        if not (real == home or real.is_relative_to(home)) or self.root.is_relative_to(home):
            return
        if any(real.is_relative_to(r) for r in self.read_only_roots):
            return
        raise ToolError(
            f"{path} is inside crab's own folder {home} (keys, trusted projects, sessions); the tools do not "
            "read or write there"
        )

    def scope_of(self, real: Path) -> Path:
        """The root ``real`` lies in (the innermost, if roots nest): where .gitignore lookup stops."""
        roots = [r for r in (*self.writable, *self.read_only_roots) if real == r or real.is_relative_to(r)]
        return max(roots, key=lambda r: len(r.parts)) if roots else real

    def display_prefix(self, scope: Path) -> str:
        """What to put before a path relative to ``scope`` so it reads as ``display`` would show it.

        Walks build names as prefix + relative path: a ``Path`` per file would dominate a search.
        """
        shown = self.display(scope)
        return "" if shown == "." else shown + "/"

    def display(self, real: Path) -> str:
        """``real`` as the model should see it: relative to the workspace when inside it."""
        if real == self.root:
            return "."
        if real.is_relative_to(self.root):
            return real.relative_to(self.root).as_posix()
        return real.as_posix()


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
    logs = session_folder(settings.log_dir, ctx.session_id)
    return Workspace(root=root, extra_roots=settings.extra_roots, read_only_roots=(Path(os.path.realpath(logs)),))
