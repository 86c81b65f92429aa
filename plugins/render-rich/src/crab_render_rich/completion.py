"""Completion for ``crab chat``: ``/`` commands at the start of the input (the menu shows each
one's description), ``/model``'s configured models, ``@path`` anywhere, and after those what
plugins offer for an ``@`` word (``ChatState.complete``: crab-mcp's ``@server:uri``).

Paths complete only inside the workspace: an ``@`` word with ``..`` or an absolute path lists
nothing, and at most ``LIMIT`` entries are read from one folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

LIMIT = 200


def command_matches(text: str, commands: Iterable[str]) -> list[str]:
    """``/he`` → ``["/help"]``; empty when ``text`` is not a lone command word."""
    if not text.startswith("/") or " " in text or "\n" in text:
        return []
    stem = text[1:]
    return [f"/{name}" for name in sorted(commands) if name.startswith(stem)]


def model_matches(text: str, models: Iterable[str]) -> list[str]:
    """``/model gpt-4`` → ``["openai/gpt-4.1", …]``: the configured ``provider/model`` choices whose
    whole name or model part starts with what is typed after ``/model``; empty for other input."""
    if not text.startswith("/model ") or "\n" in text:
        return []
    stem = text[len("/model ") :].lstrip()
    if " " in stem:
        return []
    return [name for name in models if name.startswith(stem) or name.partition("/")[2].startswith(stem)]


def path_matches(word: str, workspace: Path) -> list[str]:
    """``@src/ma`` → ``["@src/main.py", "@src/maps/"]``, relative to ``workspace`` and inside it."""
    if not word.startswith("@"):
        return []
    typed = word[1:]
    if typed.startswith(("/", "~")) or ".." in Path(typed).parts:
        return []
    folder, _, stem = typed.rpartition("/")
    base = workspace / folder if folder else workspace
    try:
        if not base.resolve().is_relative_to(workspace.resolve()):
            return []
        entries = list(_entries(base))  # read here: a folder that is not there is no match
    except OSError:
        return []
    found = []
    for name, is_dir in entries:
        if not name.startswith(stem) or (name.startswith(".") and not stem.startswith(".")):
            continue
        found.append(f"@{folder + '/' if folder else ''}{name}{'/' if is_dir else ''}")
    return sorted(found)


def plugin_matches(word: str, complete: Callable[[str], list[tuple[str, str]]]) -> list[tuple[str, str]]:
    """What plugins offer for an ``@`` word (``@tiny:`` → ``[("@tiny:tiny://note", "note")]``),
    each replacing the word; none for other words, and none when asking fails."""
    if not word.startswith("@") or len(word) < 2:
        return []
    try:
        return [(text, about) for text, about in complete(word) if text != word]
    except Exception:  # crab's ChatState.complete never raises; another host's might
        return []


def _entries(base: Path) -> Iterator[tuple[str, bool]]:
    with os.scandir(base) as scan:
        for count, entry in enumerate(scan):
            if count >= LIMIT:
                break
            try:
                yield entry.name, entry.is_dir(follow_symlinks=False)
            except OSError:
                continue


def make_completer(
    commands: Iterable[str],
    workspace: Path,
    descriptions: Mapping[str, str] | None = None,
    models: Iterable[str] = (),
    complete: Callable[[str], list[tuple[str, str]]] | None = None,
) -> object:
    """A prompt_toolkit ``Completer`` over ``command_matches`` (each shown with its description),
    ``model_matches``, ``path_matches`` and ``plugin_matches`` (through ``complete``)."""
    from prompt_toolkit.completion import Completer, Completion

    names = tuple(commands)
    described = dict(descriptions or {})
    choices = tuple(models)
    offered = complete or (lambda _word: [])

    class ChatCompleter(Completer):
        def get_completions(self, document, complete_event):  # type: ignore[no-untyped-def]
            before = document.text_before_cursor
            for match in command_matches(before, names):
                yield Completion(match, start_position=-len(before), display_meta=described.get(match[1:], ""))
            typed = before[len("/model ") :].lstrip() if before.startswith("/model ") else ""
            for match in model_matches(before, choices):
                yield Completion(match, start_position=-len(typed))
            word = before.split()[-1] if before and not before[-1].isspace() else ""
            for match in path_matches(word, workspace):
                yield Completion(match, start_position=-len(word))
            for text, about in plugin_matches(word, offered):
                yield Completion(text, start_position=-len(word), display_meta=about)

    return ChatCompleter()
