"""The user's own slash commands: Markdown files in ``$CRAB_HOME/commands/`` and a project's
``.crab/commands/``, each ``NAME.md`` the command ``/NAME``, as Claude Code's custom commands are;
Claude Code's own folders (``~/.claude/commands/``, a project's ``.claude/commands/``) are read too.

The front matter is optional (``description``, ``argument-hint``, ``allowed-tools``, ``model``);
without a ``description`` the body's first line describes the command in ``/help``. Running one
sends its body, with ``$ARGUMENTS`` and ``$1``…``$9`` filled in, as the user's prompt.

Precedence is the skills' (``crab_skills.discovery``): a trusted project's command replaces your
own of the same name; an untrusted project's never does (it is left out with one warning). Within
one scope (yours, the project's) crab's folder comes before Claude Code's. Whatever an untrusted
project's file says, ``allowed-tools`` only ever narrows what a turn may call and its ``model`` is
not used. A project's files must resolve inside their folder.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crab import Config
from crab.config import crab_home
from crab_frontmatter_kit import Document, FrontMatterError, project_folder, project_trusted, split, user_folder

from crab_skills.discovery import clean_text, inside, read_regular

KIND = "commands"
CLAUDE = ".claude"
"""Claude Code's folder: ``~/.claude`` (``$CLAUDE_CONFIG_DIR`` moves it) and a project's ``.claude``."""
INHERIT = "inherit"
"""A ``model`` that names no model: the session's (Claude Code's word for it)."""
NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9])?$")
"""A command's name: what the router reads after ``/`` (no ``:``, which starts a skill's name)."""
RESERVED = frozenset({"skill"})
"""crab-skills' own command; a file of that name is left out."""
MAX_PER_ROOT = 256
MAX_DESCRIPTION = 200
MAX_MODEL = 200
PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9])")
CLAUDE_TOOLS = {
    "Bash": "bash",
    "Read": "read",
    "Write": "write",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Grep": "grep",
    "Glob": "glob",
    "LS": "ls",
    "WebFetch": "web_fetch",
    "WebSearch": "web_search",
}
"""Claude Code's tool names in ``allowed-tools``, as crab's tools are named."""
_SPEC = re.compile(r"^([A-Za-z0-9_.-]+)(?:\((.*)\))?$")


@dataclass(frozen=True, slots=True)
class AllowedTool:
    """One ``allowed-tools`` entry: a tool, and for ``bash`` optionally the command it may run
    (``Bash(git add:*)``: commands starting with ``git add``; ``Bash(npm test)``: exactly that)."""

    tool: str
    command: str | None = None
    prefix: bool = False

    def permits(self, tool: str, arguments: dict[str, object]) -> bool:
        if tool != self.tool:
            return False
        if self.command is None:
            return True
        given = str(arguments.get("command", "")).strip()
        return given.startswith(self.command) if self.prefix else given == self.command

    @property
    def shown(self) -> str:
        if self.command is None:
            return self.tool
        return f"{self.tool}({self.command}{':*' if self.prefix else ''})"


def allowed_tools(names: Sequence[str] | None) -> tuple[AllowedTool, ...] | None:
    """``allowed-tools`` read: crab's names or Claude Code's; None when the file sets none."""
    if names is None:
        return None
    found: list[AllowedTool] = []
    for entry in _entries(names):
        match = _SPEC.match(entry.strip())
        if match is None:
            continue
        tool = CLAUDE_TOOLS.get(match.group(1), match.group(1))
        spec = match.group(2)
        if spec is None or tool != "bash" or spec.strip() in ("", "*"):
            found.append(AllowedTool(tool))
        elif spec.endswith(":*"):
            found.append(AllowedTool(tool, spec[:-2].strip(), prefix=True))
        else:
            found.append(AllowedTool(tool, spec.strip()))
    return tuple(found)


def _entries(names: Sequence[str]) -> Iterable[str]:
    """Entries of a list whose items may hold spaces inside ``( )`` (``Bash(git add:*)``), which a
    comma-and-space split tears apart: glued back together here."""
    pending = ""
    for name in names:
        pending = f"{pending} {name}".strip() if pending else name
        if pending.count("(") <= pending.count(")"):
            yield pending
            pending = ""
    if pending:
        yield pending


@dataclass(frozen=True, slots=True)
class UserCommand:
    """One command file: its name and description, where it came from, and what it may use."""

    name: str
    description: str
    file: Path
    source: str
    trusted: bool = True
    root: Path | None = None
    """The project's commands folder its file must resolve inside (None for the user's own)."""
    hint: str = ""
    allowed: tuple[AllowedTool, ...] | None = None
    model: str | None = None

    @property
    def label(self) -> str:
        return self.source if self.trusted else f"{self.source}, not trusted"


@dataclass
class Commands:
    """Every command found, by name in precedence order, and one warning per problem."""

    found: dict[str, UserCommand] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def parse(text: str) -> Document:
    """A command file: front matter (optional, unlike a SKILL.md) and body."""
    if not text.lstrip("\ufeff").startswith("---"):
        return Document(body=text.lstrip("\ufeff").strip("\n"))
    return split(text)


def _scalar(document: Document, key: str) -> str:
    """A value as written: ``argument-hint: [focus]`` reads as a one-item list in YAML."""
    if key in document.lists:
        return "[" + ", ".join(document.lists[key]) + "]"
    return document.fields.get(key, "")


def read_command(file: Path, source: str, trusted: bool, contained: Path | None, limit: int) -> UserCommand:
    """The command in ``file``; ``ValueError`` with the reason when it cannot be used."""
    if contained is not None and not inside(file, contained):
        raise ValueError("it is a symlink leading outside the commands folder; ignored")
    name = file.stem
    if not NAME.match(name):
        raise ValueError(f"{clean_text(name, 40)!r} is not a command name (letters, digits, '_' and '-')")
    if name in RESERVED:
        raise ValueError(f"/{name} is crab-skills' own command; rename the file")
    try:
        data, _ = read_regular(file, limit)
        document = parse(data.decode("utf-8", errors="replace"))
    except OSError as exc:
        raise ValueError(f"cannot read it: {exc.strerror or exc}") from None
    except FrontMatterError as exc:
        raise ValueError(str(exc)) from None
    first = next((line for line in document.body.splitlines() if line.strip()), "")
    description = clean_text(document.fields.get("description", "") or first.lstrip("# "), MAX_DESCRIPTION)
    written = clean_text(document.fields.get("model", ""), MAX_MODEL).strip()  # shown in lines: printable
    model = None if written.lower() in ("", INHERIT) else written
    return UserCommand(
        name,
        description or f"run {file.name}",
        file,
        source,
        trusted,
        contained,
        clean_text(_scalar(document, "argument-hint"), 80),
        allowed_tools(document.names("allowed-tools")),
        model,
    )


def _files(folder: Path) -> list[Path]:
    """``*.md`` files of ``folder`` and of its sub-folders one level down (Claude Code's namespaces)."""
    found: list[Path] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        if entry.name.endswith(".md"):
            found.append(path)
        elif entry.is_dir():
            try:
                found.extend(sorted(p for p in path.glob("*.md") if not p.name.startswith(".")))
            except OSError:
                continue
        if len(found) > MAX_PER_ROOT:
            break
    return found


def claude_user_folder() -> Path | None:
    """``~/.claude/commands`` (``$CLAUDE_CONFIG_DIR/commands`` when that is set, as in Claude Code);
    None where the user has no home folder at all (no ``$HOME``, no passwd entry)."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    try:
        return (Path(configured).expanduser() if configured else Path.home() / CLAUDE) / KIND
    except RuntimeError:
        return None


def claude_project_folder(workspace: Path) -> Path | None:
    """The nearest ``.claude/commands`` from ``workspace`` up to the repository root; never the
    user's own Claude Code folder nor ``$CRAB_HOME``, whatever folder crab runs in."""
    try:
        here = workspace.resolve()
        claude = claude_user_folder()
        own = {crab_home().resolve(), *([claude.parent.resolve()] if claude is not None else [])}
    except OSError:
        return None
    for folder in (here, *here.parents):
        dot = folder / CLAUDE
        if (dot / KIND).is_dir() and dot.resolve() not in own:
            return dot / KIND
        if (folder / ".git").exists():
            return None
    return None


def claude_project_trusted(folder: Path, config: Config) -> bool:
    """A project's ``.claude/commands`` is trusted when the ``.crab`` beside its ``.claude`` is the
    project config the user trusted (``crab trust``); Claude Code's folder has no trust of its own."""
    return project_trusted(folder.parent.parent / ".crab" / KIND, config)


def roots(workspace: Path, config: Config, read_project: bool) -> list[tuple[Path, str, bool, bool]]:
    """(folder, source, trusted, contained) in precedence order, as skills are searched: a trusted
    project's folders before yours, an untrusted project's after; crab's before Claude Code's."""
    user = [(user_folder(KIND), "user", True, False)]
    claude = claude_user_folder()
    if claude is not None:
        user.append((claude, "~/.claude", True, False))
    if not read_project:
        return user
    trusted: list[tuple[Path, str, bool, bool]] = []
    untrusted: list[tuple[Path, str, bool, bool]] = []
    project = project_folder(workspace, KIND)
    if project is not None:
        ok = project_trusted(project, config)
        (trusted if ok else untrusted).append((project, "project", ok, True))
    claude = claude_project_folder(workspace)
    if claude is not None:
        ok = claude_project_trusted(claude, config)
        (trusted if ok else untrusted).append((claude, ".claude", ok, True))
    return [*trusted, *user, *untrusted]


def discover(workspace: Path, config: Config, limit: int, read_project: bool = True) -> Commands:
    """Every command for ``workspace``: the first of a name wins, a later one is one warning."""
    commands = Commands()
    for folder, source, trusted, contained in roots(workspace, config, read_project):
        if not folder.is_dir():
            continue
        files = _files(folder)
        if len(files) > MAX_PER_ROOT:
            commands.warnings.append(f"commands: {folder} has more than {MAX_PER_ROOT} files; the rest are ignored")
        for file in files[:MAX_PER_ROOT]:
            try:
                command = read_command(file, source, trusted, folder if contained else None, limit)
            except ValueError as exc:
                commands.warnings.append(f"commands: {file}: {exc}")
                continue
            first = commands.found.get(command.name)
            if first is not None:
                commands.warnings.append(
                    f"commands: /{command.name} from {command.label} ({command.file}) is hidden by the one from "
                    f"{first.label} ({first.file}); rename one to use both"
                )
                continue
            commands.found[command.name] = command
    return commands


def expand(body: str, args: str) -> str:
    """``body`` with ``$ARGUMENTS`` (the whole argument text) and ``$1``…``$9`` (its words;
    quotes group words) filled in, in one pass: an argument that itself holds ``$1`` stays as
    typed. A body with no placeholder gets the arguments after it, as Claude Code does."""
    args = args.strip()
    try:
        words = shlex.split(args)
    except ValueError:  # an unclosed quote: split at spaces
        words = args.split()
    if not PLACEHOLDER.search(body):
        return f"{body}\n\nARGUMENTS: {args}" if args else body

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "ARGUMENTS":
            return args
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    return PLACEHOLDER.sub(fill, body)


def prompt(command: UserCommand, limit: int, args: str) -> str:
    """What running ``command`` sends as the user's prompt. Text that would be routed again (a
    body starting with ``/`` or ``!``) is preceded by a line naming the command, so it reaches
    the model as text and never runs as a command or a shell line."""
    if command.root is not None and not inside(command.file, command.root):
        raise OSError(f"{command.file} leads outside {command.root}")
    data, cut = read_regular(command.file, limit)
    try:
        body = parse(data.decode("utf-8", errors="replace")).body
    except FrontMatterError as exc:  # changed since it was listed
        raise OSError(f"{command.file}: {exc}") from None
    text = expand(body, args)
    if cut:
        text += f"\n[{command.file.name} cut at {limit} bytes]"
    if text.lstrip().startswith(("/", "!")) or not text.strip():
        text = f"(/{command.name})\n{text}"
    return text
