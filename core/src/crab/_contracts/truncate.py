"""The budget for text sent to the model (``OutputLimit``) and what a cut removed (``Truncation``);
the cutting itself is ``crab/_values/truncate.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Keep = Literal["head", "tail"]


@dataclass(frozen=True, slots=True)
class OutputLimit:
    """A budget for text sent to the model: at most ``lines`` lines and ``bytes`` UTF-8 bytes."""

    lines: int = 2000
    bytes: int = 50_000
    keep: Keep = "head"


@dataclass(frozen=True, slots=True)
class Truncation:
    """What ``truncate`` cut: lines and bytes kept and in total, and which limit was hit."""

    kept_lines: int
    total_lines: int
    kept_bytes: int
    total_bytes: int
    limit: Literal["lines", "bytes"]
    keep: Keep
