"""The recap ``crab chat -c`` starts with (core's ``resume`` output), split so answers render as
Markdown, as they did live.

Core sends it as text: a header line, then each exchange as the user's input on a ``> `` line and
the answer (shortened) below it. A ``> `` line inside an answer's code fence stays in the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from crab_render_rich.blocks import FENCES

Kind = Literal["header", "said", "answer"]


@dataclass(frozen=True)
class Part:
    kind: Kind
    text: str


def recap_parts(text: str) -> list[Part]:
    """``text`` as its header, the user's inputs and the answers, in order."""
    header, *lines = text.rstrip("\n").split("\n")
    parts = [Part("header", header)]
    answer: list[str] = []
    fence: str | None = None

    def end_answer() -> None:
        if "".join(answer).strip():
            parts.append(Part("answer", "\n".join(answer)))
        answer.clear()

    for line in lines:
        stripped = line.strip()
        if fence is None and line.startswith("> "):
            end_answer()
            parts.append(Part("said", line[2:]))
            continue
        answer.append(line)
        mark = next((m for m in FENCES if stripped.startswith(m)), None)
        if mark is not None and (fence is None or stripped.startswith(fence)):
            fence = None if fence is not None else mark
    end_answer()
    return parts
