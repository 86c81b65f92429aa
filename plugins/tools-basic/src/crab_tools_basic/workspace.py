"""The workspace seatbelt: turn a path the model sent into a real path inside the allowed roots.

Roots are the session's workspace plus any ``extra_roots`` from config. A path that leaves them
(absolute elsewhere, ``..``, or a symlink pointing out) is refused, and so is crab's own folder
(``$CRAB_HOME``) wherever it lies, but for this session's bash logs. This guards against a
confused model, not an attacker: ``bash`` can still reach anything the user can.

The roots' real paths are remembered between calls only while each still names the same folder
(``real_folder``); the path a call names is resolved every time.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crab import ConfigError, ToolContext, ToolError
from crab.config import crab_home

from crab_tools_basic.bash_log import session_folder_name
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
    _texts: tuple[str, tuple[str, ...], tuple[str, ...]] = field(init=False, repr=False, compare=False)
    """The roots' text (root, writable, all), made once: ``resolve`` runs on every call."""

    def __post_init__(self) -> None:
        writable = tuple(str(r) for r in self.writable)
        texts = (str(self.root), writable, (*writable, *(str(r) for r in self.read_only_roots)))
        object.__setattr__(self, "_texts", texts)

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
        names = path.split("/")
        root, writable, every = self._texts
        try:
            if path[0] not in "/~" and _NOT_PLAIN.isdisjoint(names):
                # The common case, a plain relative path: only the names below the real root are looked at.
                real = realpath_below(root, names)
            else:
                given = Path(path).expanduser()
                real = os.path.realpath(given if given.is_absolute() else self.root / given)
        except OSError as exc:  # a link replaced between realpath's lstat and readlink
            raise ToolError(f"{path} cannot be resolved ({exc.strerror or exc}); try again") from None
        self._refuse_private(path, real)
        # Paths are compared by their text (``within``); one Path is made, for the caller.
        if any(within(real, r) for r in (writable if write else every)):
            return Path(real)
        if write and any(within(real, root) for root in self.read_only_roots):
            raise ToolError(f"{path} is in a read-only folder; write inside the workspace {self.root}")
        raise ToolError(
            f"{path} resolves to {real}, outside the workspace {self.root}; "
            "use a path inside it (or add the folder to [plugins.tools-basic] extra_roots)"
        )

    def _refuse_private(self, path: str, real: str) -> None:
        """crab's own folder is off limits even inside the workspace (crab run in ``~``), except
        this session's bash logs; unless the user works inside that folder on purpose."""
        home = self.private if self.private is not None else str(private_folder())
        if not within(real, home) or within(self._texts[0], home):
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
    return _realpath_below(base, names)[0]


def _realpath_below(base: str, names: Sequence[str]) -> tuple[str, bool]:
    """``realpath_below``'s answer, and False when a name on the way (outside any link) does not exist."""
    path = base
    for index, name in enumerate(names):
        candidate = path + "/" + name if path != "/" else "/" + name
        try:
            info = os.lstat(candidate)
        except OSError:
            return os.path.join(candidate, *names[index + 1 :]), False
        if stat.S_ISLNK(info.st_mode):
            return os.path.realpath(os.path.join(candidate, *names[index + 1 :])), True
        path = candidate
    return path, True


def within(path: Path | str, root: Path | str) -> bool:
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
    root = real_folder(str(ctx.workspace))
    private = real_folder(str(crab_home()))  # the logs' default folder and the private folder both need it
    if settings.output_dir is None:  # the default, inside crab's folder: resolved from its real path
        logs = real_folder(os.path.join(private, *LOGS_IN_HOME, session_folder_name(ctx.session_id)), private)
    else:
        logs = real_folder(os.path.join(settings.output_dir, session_folder_name(ctx.session_id)))
    key = (root, private, logs, settings.extra_roots)
    found = _WORKSPACES.get(key)
    if found is None:  # the same real folders give the same seatbelt: its Paths are made once
        if len(_WORKSPACES) >= _REAL_FOLDERS_MAX:
            _WORKSPACES.clear()
        found = _WORKSPACES[key] = Workspace(Path(root), settings.extra_roots, (Path(logs),), private)
    return found


_WORKSPACES: dict[tuple[str, str, str, tuple[Path, ...]], Workspace] = {}


_NOT_PLAIN = frozenset(("", ".", ".."))
_REAL_FOLDERS: dict[str, tuple[str, int, int]] = {}
"""A folder's path → its real path and the (device, inode) of the folder both named, when last resolved."""
_REAL_FOLDERS_MAX = 256


def real_folder(path: str, real_base: str | None = None) -> str:
    """``os.path.realpath(path)`` for a folder, without walking it again while it is the same folder.

    A remembered answer is used only while ``path`` and the real path it gave both still name the
    folder they named then (one ``stat`` each, in C; realpath looks at every component, ~10 µs
    in Python): a folder moved, replaced or reached through a changed symlink is resolved anew.
    A path that is not an existing folder is resolved every time and not remembered. With
    ``real_base`` (a real path ``path`` starts with), only the names below it are looked at.
    """
    kept = _REAL_FOLDERS.get(path)
    if kept is not None:
        real, device, inode = kept
        try:
            now = os.stat(path)
            there = now if real == path else os.stat(real)  # most folders are named by their real path
        except OSError:
            pass
        else:
            if (now.st_dev, now.st_ino) == (device, inode) == (there.st_dev, there.st_ino):
                return real
    if real_base is not None and path.startswith(real_base + "/"):
        real, found = _realpath_below(real_base, path[len(real_base) + 1 :].split("/"))
        if not found:  # no such folder (the bash logs' before the first command): nothing to stat
            return real
    else:
        real = os.path.realpath(path)
    try:
        info = os.stat(real)
    except OSError:
        return real
    if stat.S_ISDIR(info.st_mode):
        if len(_REAL_FOLDERS) >= _REAL_FOLDERS_MAX:
            _REAL_FOLDERS.clear()  # one entry per workspace and session: many means sessions came and went
        _REAL_FOLDERS[path] = (real, info.st_dev, info.st_ino)
    return real
