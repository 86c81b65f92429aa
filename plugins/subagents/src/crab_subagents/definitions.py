"""Agent definitions: Markdown files with front matter, where they are found, and what they may do.

An agent file (``NAME.md`` in ``$CRAB_HOME/agents/`` or a project's ``.crab/agents/``) reads::

    ---
    name: explore
    description: Reads code to answer one question; changes nothing
    tools: read, grep, glob        # or a list; Claude Code's names (Read, Grep…) work too
    model: inherit                 # or provider/model, or a model of the parent's provider
    max_iterations: 10             # also max-turns / maxTurns
    permissions: read-only         # narrower only: read-only (Claude Code: permissionMode: plan)
    isolation: worktree            # a folder of its own (a plugin offers it: crab-worktree)
    ---
    The instructions the child gets after crab's system prompt.

Precedence, the first of a name winning: a trusted project (``crab trust``), then the user's
own, then the built-in ``general``; an untrusted project's agents come last, so they add names
but never replace one, and they run read-only with the parent's model (nothing a repository
wrote can widen what a child may do or route what it spends).
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from crab import Config
from crab_frontmatter_kit import FrontMatterError, project_folder, project_trusted, split, user_folder

KIND = "agents"
MAX_BYTES = 64 * 1024
MAX_FILES = 256
MAX_DESCRIPTION = 300
NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?$")
ISOLATION = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
"""An ``isolation`` value: the name of what a plugin offers (``crab_child_workspaces``: ``worktree``)."""
INHERIT_MODELS = frozenset({"", "inherit", "sonnet", "opus", "haiku", "default"})
"""``model`` values that mean the parent's model (Claude Code's aliases name Anthropic models a
crab run may not have: the parent's choice is the one the user made)."""

ITERATION_KEYS = ("max_iterations", "max-iterations", "max-turns", "maxTurns", "max_turns")
"""Front-matter keys for the cap on a child's model calls (crab's, then Claude Code's spellings)."""

CLAUDE_TOOLS = {
    "read": "read",
    "write": "write",
    "edit": "edit",
    "multiedit": "edit",
    "bash": "bash",
    "grep": "grep",
    "glob": "glob",
    "ls": "ls",
    "webfetch": "web_fetch",
    "websearch": "web_search",
    "task": "task",
    "todowrite": "todo",
    "todoread": "todo",
}
"""Claude Code's tool names (lower-cased) → crab's; any other name is taken as a crab tool name."""

GENERAL_INSTRUCTIONS = (
    "Work on the task on your own with the tools you have; you cannot ask the user anything. "
    "When done, answer with what you found or did: the outcome first, then the details the "
    "caller needs (paths, `path:line`, commands and how they ended). Keep it short."
)


@dataclass(frozen=True, slots=True)
class AgentDef:
    """One agent a ``task`` call may run: its name and description, the tools it may use (None:
    the parent's), its model (None: the parent's), its cap on model calls, whether it runs
    read-only, the folder of its own it asks for (``isolation``: None, or ``"worktree"``), its
    instructions, and where it came from."""

    name: str
    description: str
    tools: tuple[str, ...] | None = None
    model: str | None = None
    max_iterations: int | None = None
    read_only: bool = False
    isolation: str | None = None
    instructions: str = ""
    source: str = "built-in"
    file: Path | None = None
    trusted: bool = True


GENERAL = AgentDef(
    "general",
    "General-purpose agent for a self-contained, multi-step sub-task (research, a search across "
    "the code, a change in a few files); it has your tools.",
    instructions=GENERAL_INSTRUCTIONS,
)


@dataclass
class Catalog:
    """Every agent found, by name in precedence order, and one warning line per problem."""

    agents: dict[str, AgentDef] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def clean_line(text: str, limit: int) -> str:
    """One line of printable text, cut at ``limit`` characters (with …)."""
    kept = "".join(" " if ch.isspace() else ch for ch in text if ch.isspace() or unicodedata.category(ch)[0] != "C")
    line = " ".join(kept.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def tool_names(names: Sequence[str]) -> tuple[tuple[str, ...] | None, list[str]]:
    """Tool names as crab spells them (Claude Code's mapped), and the entries left out.

    ``*`` means every tool (None). A Claude Code rule such as ``Bash(git:*)`` allows only part
    of a tool, which crab cannot express: it is left out rather than widened to the whole tool.
    """
    kept: list[str] = []
    dropped: list[str] = []
    for raw in names:
        name = raw.strip()
        if name == "*":
            return None, dropped
        if not name:
            continue
        if "(" in name or ")" in name:
            dropped.append(name)
            continue
        mapped = CLAUDE_TOOLS.get(name.lower(), name)
        if mapped not in kept:
            kept.append(mapped)
    return tuple(kept), dropped


def _read_regular(path: Path, limit: int) -> bytes:
    """Up to ``limit`` bytes of a regular file (a FIFO or device is refused, never read)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit)
    finally:
        os.close(fd)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except (OSError, ValueError):
        return False
    return True


def _int(value: str | None, key: str) -> int | None:
    if value is None or not value.strip():
        return None
    try:
        number = int(value.strip())
    except ValueError:
        raise ValueError(f"{key} must be a whole number, not {value!r}") from None
    if not 1 <= number <= 200:
        raise ValueError(f"{key} must be between 1 and 200, not {number}")
    return number


def read_agent(
    file: Path, source: str, *, trusted: bool = True, folder: Path | None = None
) -> tuple[AgentDef, list[str]]:
    """The agent ``file`` defines and the notes on what of it was left out; ``ValueError`` with
    the reason when it cannot be used. ``folder`` (a project's) is the folder it must resolve in."""
    if folder is not None and not _inside(file, folder):
        raise ValueError("it is a symlink leading outside the agents folder; ignored")
    try:
        data = _read_regular(file, MAX_BYTES)
    except OSError as exc:
        raise ValueError(f"cannot read it: {exc.strerror or exc}") from None
    try:
        document = split(data.decode("utf-8", errors="replace"), expect=("name", "description"))
    except FrontMatterError as exc:
        raise ValueError(str(exc)) from None
    fields = document.fields
    name = fields.get("name", "").strip() or file.stem
    if not NAME.match(name):
        raise ValueError(f"name {clean_line(name, 40)!r} is not 1-64 letters, digits, '.', '_' or '-'")
    description = clean_line(fields.get("description", ""), MAX_DESCRIPTION)
    if not description:
        raise ValueError("no description: add `description: what the agent does and when to use it`")
    notes: list[str] = []
    listed = document.names("tools")
    if "tools" in fields and "," in fields["tools"]:
        # Claude Code's comma list: split at commas only, so `Bash(git diff:*)` stays one rule.
        listed = tuple(part.strip() for part in fields["tools"].split(",") if part.strip())
    tools: tuple[str, ...] | None = None
    if listed is not None:
        tools, dropped = tool_names(listed)
        if dropped:
            notes.append(f"tool rules crab cannot express were left out: {', '.join(dropped)}")
    model = fields.get("model", "").strip()
    iterations = next((fields[k] for k in ITERATION_KEYS if k in fields), None)
    mode = (fields.get("permissions") or fields.get("permissionMode") or fields.get("permission-mode") or "").strip()
    read_only = mode.lower() in ("read-only", "readonly", "plan")
    if mode and not read_only and mode.lower() not in ("ask", "inherit", "default"):
        shown = clean_line(mode, 30)
        notes.append(f"permissions {shown!r} ignored: an agent runs with your mode or read-only, never more")
    isolation = fields.get("isolation", "").strip().lower()
    if isolation in ("", "none"):
        isolation = ""
    elif not ISOLATION.match(isolation):
        notes.append(f"isolation {clean_line(isolation, 30)!r} ignored: it is a name such as `worktree`")
        isolation = ""
    agent = AgentDef(
        name=name,
        description=description,
        tools=tools,
        model=None if model.lower() in INHERIT_MODELS else model,
        max_iterations=_int(iterations, "max_iterations"),
        read_only=read_only,
        isolation=isolation or None,
        instructions=document.body.strip(),
        source=source,
        file=file,
        trusted=trusted,
    )
    if not trusted:
        # A repository's agent: read-only, on the parent's model (see the module docstring).
        if agent.model is not None:
            notes.append("model ignored: the project is not trusted (crab trust), so the agent runs on your model")
        agent = replace(agent, model=None, read_only=True)
    return agent, notes


def _files(folder: Path) -> Iterable[Path]:
    try:
        names = sorted(entry.name for entry in os.scandir(folder))
    except OSError:
        return
    count = 0
    for name in names:
        if name.startswith(".") or not name.endswith(".md"):
            continue
        count += 1
        if count > MAX_FILES:
            return
        yield folder / name


def folders(workspace: Path, config: Config, project: bool) -> list[tuple[Path, str, bool, bool]]:
    """(folder, source, trusted, contained) in precedence order (see the module docstring);
    the built-in ``general`` sits between the trusted ones and an untrusted project."""
    user = (user_folder(KIND), "user", True, False)
    found = project_folder(workspace, KIND) if project else None
    if found is None:
        return [user]
    if project_trusted(found, config):
        return [(found, "project", True, True), user]
    return [user, (found, "project", False, True)]


def discover(workspace: Path, config: Config, project: bool = True) -> Catalog:
    """Every agent for ``workspace``: the first of a name wins, a later one is left out with a warning."""
    catalog = Catalog()

    def add(agent: AgentDef) -> None:
        kept = catalog.agents.get(agent.name)
        if kept is None:
            catalog.agents[agent.name] = agent
            return
        where = f" ({kept.file})" if kept.file is not None else ""
        catalog.warnings.append(
            f"agent {agent.name} in {agent.file} left out: {kept.source}'s agent{where} has that name"
        )

    for folder, source, trusted, contained in folders(workspace, config, project):
        if not trusted:
            catalog.agents.setdefault(GENERAL.name, GENERAL)
        for file in _files(folder):
            try:
                agent, notes = read_agent(file, source, trusted=trusted, folder=folder if contained else None)
            except ValueError as exc:
                catalog.warnings.append(f"agent file {file} ignored: {exc}")
                continue
            catalog.warnings.extend(f"agent file {file}: {note}" for note in notes)
            add(agent)
    catalog.agents.setdefault(GENERAL.name, GENERAL)
    return catalog
