"""``/edit`` at plain ``crab chat``'s prompt: the next input written in the user's ``$EDITOR`` (``$VISUAL``,
``$EDITOR``, else the first of ``FALLBACKS`` on ``PATH``) on a temporary file."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from crab._contracts.errors import UsageError

FALLBACKS = ("editor", "nano", "vi")


def editor_command(env: Mapping[str, str] | None = None) -> list[str]:
    """The editor to run, as argv; ``UsageError`` saying what to set when there is none."""
    env = os.environ if env is None else env
    for name in ("VISUAL", "EDITOR"):
        value = env.get(name, "").strip()
        if value:
            return shlex.split(value)
    for name in FALLBACKS:
        found = shutil.which(name)
        if found:
            return [found]
    raise UsageError("no editor found: set EDITOR (export EDITOR=nano) and try /edit again")


def edit_text(initial: str = "", env: Mapping[str, str] | None = None) -> str:
    """What the user left in the editor, started on ``initial`` (one trailing newline dropped)."""
    command = editor_command(env)
    handle, name = tempfile.mkstemp(prefix="crab-edit-", suffix=".md")
    path = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(initial)
        try:
            done = subprocess.run([*command, str(path)], check=False)
        except OSError as exc:
            raise UsageError(f"could not start the editor {command[0]!r}: {exc.strerror}; check EDITOR") from None
        if done.returncode != 0:
            raise UsageError(f"the editor {command[0]!r} exited with {done.returncode}: nothing was sent")
        text = path.read_text(encoding="utf-8", errors="replace")
    finally:
        path.unlink(missing_ok=True)
    return text[:-1] if text.endswith("\n") else text
