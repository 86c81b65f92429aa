"""How an error reaches the user: one line, its secrets masked, and no value in it unbounded (a 3 MB
``--store`` must not make a 3 MB line); usage errors get the same one line, not the usage block."""

from __future__ import annotations

import re
from typing import Any

QUOTED_LIMIT = 80
LINE_LIMIT = 1000
_QUOTED = re.compile(rf"'[^'\n]{{{QUOTED_LIMIT + 1},}}'|\"[^\"\n]{{{QUOTED_LIMIT + 1},}}\"")


def bounded(text: str) -> str:
    """``text`` on one line, quoted values cut to ``QUOTED_LIMIT`` characters and the whole to ``LINE_LIMIT``."""
    text = _QUOTED.sub(lambda m: m.group(0)[: QUOTED_LIMIT + 1] + "…" + m.group(0)[-1], text)
    text = " ".join(text.splitlines())
    return text if len(text) <= LINE_LIMIT else text[: LINE_LIMIT - 1] + "…"


def error_line(text: str) -> str:
    """What ``crab`` prints for an error it stops on: masked (``crab._secrets``), then bounded."""
    from crab._secrets.redaction import error_line as masked

    return bounded(masked(text))


def is_click_error(error: BaseException, name: str) -> bool:
    """Whether ``error`` is click's ``name`` (``ClickException``, ``Abort``): typer keeps its own
    copy of click from 0.2x and uses click itself before, so the class is matched by name."""
    return any(cls.__name__ == name for cls in type(error).__mro__)


def usage_line(error: Any) -> str:
    """One line for a usage error: click's message and where the command's help is."""
    command = getattr(getattr(error, "ctx", None), "command_path", None) or "crab"
    return error_line(f"{command}: {error.format_message()} (see `{command} --help`)")
