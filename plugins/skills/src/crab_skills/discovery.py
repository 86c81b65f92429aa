"""Finding skills: which folders are searched, in what precedence, and what is read from each.

A skill is a folder holding a ``SKILL.md`` (front matter with ``name`` and ``description``, then
the body) and any files beside it. Roots are searched in precedence order and the first skill
of a name wins; a later one of the same name is left out with a warning naming both:

- a **trusted** project (its ``.crab/config.toml`` trusted with ``crab trust``): project, user
  (``$CRAB_HOME/skills``), configured ``paths``, plugins (``crab_skill_dirs``);
- an **untrusted** project: user, configured paths, plugins, then the project, so a cloned
  repository can add skills but never replace one of yours.

A project's ``.crab/skills`` is repository content, so everything read from it must resolve
inside it: a skill folder or ``SKILL.md`` that is a symlink leading elsewhere is ignored with a
warning. Only regular files are read (a FIFO cannot hang crab), at most ``max_bytes`` of each;
only the first ``HEAD_BYTES`` are read to list a skill; names and descriptions are checked and
cleaned before they reach a prompt.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crab_frontmatter_kit import FrontMatterError, split

SKILL_FILE = "SKILL.md"
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_PER_ROOT = 256
"""Skill folders read from one root at most (a huge checkout cannot make every prompt scan it all)."""
HEAD_BYTES = 16 * 1024
"""What discovery reads of a SKILL.md: its front matter must close within it (the body is read on use)."""
NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?$")


@dataclass(frozen=True, slots=True)
class Root:
    """A folder of skill folders (or one skill folder itself), where it came from, and whether
    what it holds must stay inside it (``contained``: repository content)."""

    path: Path
    source: str
    contained: bool = False
    trusted: bool = True


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill: its checked name and description, where it came from, and its files."""

    name: str
    description: str
    source: str
    folder: Path
    file: Path
    trusted: bool = True
    contained: bool = False

    @property
    def label(self) -> str:
        """The source as users read it (``project (not trusted)`` for an untrusted repository)."""
        return self.source if self.trusted else f"{self.source} (not trusted)"


@dataclass
class Catalog:
    """Every skill found, by name in precedence order, and one warning line per problem."""

    skills: dict[str, Skill] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name)


def clean_text(text: str, limit: int) -> str:
    """One line of printable text: control and format characters dropped, whitespace collapsed,
    cut at ``limit`` characters (with …)."""
    kept = "".join(" " if ch.isspace() else ch for ch in text if ch.isspace() or unicodedata.category(ch)[0] != "C")
    line = " ".join(kept.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` resolves to ``folder`` or somewhere below it."""
    try:
        path.resolve().relative_to(folder.resolve())
    except (OSError, ValueError):
        return False
    return True


def read_regular(path: Path, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of a regular file, and whether there was more. ``OSError`` otherwise.

    Opened non-blocking and refused unless it is a regular file once open (a FIFO or a device
    would block or never end).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    return data[:limit], len(data) > limit


Stamp = tuple[int, int, int, int]
Cache = dict[tuple[Path, Root], tuple[Stamp, "Skill | str"]]
"""What ``discover`` read before, by file: (its stat stamp, the skill or the reason it was refused)."""


def _stamp(file: Path) -> Stamp | None:
    try:
        st = file.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


def read_skill(folder: Path, root: Root, limit: int) -> Skill:
    """The skill in ``folder``; ``ValueError`` with the reason when it cannot be used."""
    file = folder / SKILL_FILE
    if root.contained and not (inside(folder, root.path) and inside(file, root.path)):
        raise ValueError("it is a symlink leading outside the skills folder; ignored")
    try:
        data, _ = read_regular(file, min(limit, HEAD_BYTES))
    except OSError as exc:
        raise ValueError(f"cannot read it: {exc.strerror or exc}") from None
    try:
        document = split(data.decode("utf-8", errors="replace"), expect=("name", "description"))
    except FrontMatterError as exc:
        raise ValueError(str(exc)) from None
    name = document.fields.get("name", "").strip() or folder.name
    if not NAME.match(name):
        raise ValueError(
            f"name {clean_text(name, 40)!r} is not 1-{MAX_NAME} letters, digits, '.', '_' or '-' "
            "(starting and ending with a letter or digit)"
        )
    description = clean_text(document.fields.get("description", ""), MAX_DESCRIPTION)
    if not description:
        raise ValueError("no description: add `description: what the skill does and when to use it`")
    return Skill(name, description, root.source, folder, file, root.trusted, root.contained)


def _folders(root: Root) -> Iterable[Path]:
    """The skill folders of ``root``: itself when it holds a SKILL.md, else its sub-folders."""
    if (root.path / SKILL_FILE).exists():
        yield root.path
        return
    try:
        entries = sorted(os.scandir(root.path), key=lambda e: e.name)
    except OSError:
        return
    count = 0
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        if not (path / SKILL_FILE).exists() and not (path / SKILL_FILE).is_symlink():
            continue
        count += 1
        yield path
        if count > MAX_PER_ROOT:  # one more than kept, so the caller can say some were left out
            return


def _cached_read(folder: Path, root: Root, limit: int, cache: Cache | None) -> Skill:
    """``read_skill``, answered from ``cache`` while the file's stat stamp is unchanged."""
    file = folder / SKILL_FILE
    stamp = _stamp(file)
    key = (file, root)
    if cache is not None and stamp is not None:
        hit = cache.get(key)
        if hit is not None and hit[0] == stamp:
            if isinstance(hit[1], str):
                raise ValueError(hit[1])
            return hit[1]
    try:
        skill = read_skill(folder, root, limit)
    except ValueError as exc:
        if cache is not None and stamp is not None:
            cache[key] = (stamp, str(exc))
        raise
    if cache is not None and stamp is not None:
        cache[key] = (stamp, skill)
    return skill


def discover(roots: Sequence[Root], max_bytes: int, cache: Cache | None = None) -> Catalog:
    """Every skill under ``roots`` (in precedence order): the first of a name wins.

    With ``cache`` (kept by the caller between calls), a SKILL.md whose stat is unchanged is not
    read again: the prompt searches the roots before every model call.
    """
    catalog = Catalog()
    for root in roots:
        if not root.path.is_dir():
            continue
        folders = list(_folders(root))
        if len(folders) > MAX_PER_ROOT:
            catalog.warnings.append(f"skills: {root.path} has more than {MAX_PER_ROOT} skills; the rest are ignored")
        for folder in folders[:MAX_PER_ROOT]:
            try:
                skill = _cached_read(folder, root, max_bytes, cache)
            except ValueError as exc:
                catalog.warnings.append(f"skills: {folder / SKILL_FILE}: {exc}")
                continue
            first = catalog.skills.get(skill.name)
            if first is not None:
                catalog.warnings.append(
                    f"skills: {skill.name!r} from {skill.label} ({skill.file}) is hidden by the one from "
                    f"{first.label} ({first.file}); rename one to use both"
                )
                continue
            catalog.skills[skill.name] = skill
    return catalog
