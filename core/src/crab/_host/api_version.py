"""The plugin API version and the version ranges plugins declare (``CRAB_API = ">=1.0,<2"``)."""

from __future__ import annotations

import re

API_VERSION = "1.7"
"""Bumped in the minor part for additions, in the major part for incompatible hook changes."""

_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<|~=)?\s*(\d+(?:\.\d+)*)\s*$")


def _parse(version: str) -> tuple[int, ...]:
    parts = tuple(int(p) for p in version.split("."))
    return parts + (0,) * (3 - len(parts))


def check_range(spec: str, version: str = API_VERSION) -> bool:
    """Whether ``version`` satisfies ``spec``, a comma list like ``">=1.0,<2"``.

    Raises ``ValueError`` for a spec it cannot read.
    """
    have = _parse(version)
    for clause in spec.split(","):
        match = _CLAUSE.match(clause)
        if not match:
            raise ValueError(f'cannot read version range {spec!r} (write it like ">=1.0,<2")')
        op, text = match.group(1) or "==", match.group(2)
        want = _parse(text)
        if op == "~=":
            upper = _parse(".".join(text.split(".")[:-1] or [text]))
            ok = have >= want and have[: len(text.split(".")) - 1] == upper[: len(text.split(".")) - 1]
        else:
            ok = {
                ">=": have >= want,
                "<=": have <= want,
                ">": have > want,
                "<": have < want,
                "==": have == want,
                "!=": have != want,
            }[op]
        if not ok:
            return False
    return True
