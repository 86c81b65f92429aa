"""The plugin API version and the version ranges plugins declare (``CRAB_API = ">=0.1,<0.2"``): whether
one fits, and which side to change when it does not.

Read by hand, not with ``packaging.specifiers`` (pluggy has no version ranges): packaging is no
dependency of crab-core, and importing it costs 24.5 ms of CPU and 32 modules on every command
that loads a plugin (measured beside ``check_range``, which needs 7 µs a check to its 12 µs)."""

from __future__ import annotations

import re

from crab._version import __version__

API_VERSION = ".".join(__version__.split(".")[:2])
"""crab-core's own ``major.minor`` (``0.1`` for 0.1.x): while crab is 0.x each minor release may change
the API, so a plugin declares the minors it was written for (``">=0.1,<0.2"``); from 1.0 on, the
major part."""

OLD_NUMBERING = ((1, 0, 0), (2, 0, 0))
"""Before crab-core 0.1 aligned them, the plugin API had numbers of its own (1.0 to 1.8, with a
shim layer for moved names): a range starting in there was written for that API."""

_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<|~=)?\s*(\d+(?:\.\d+)*)\s*$")


def _parse(version: str) -> tuple[int, ...]:
    parts = tuple(int(p) for p in version.split("."))
    return parts + (0,) * (3 - len(parts))


def _unmet(spec: str, version: str) -> tuple[str, tuple[int, ...]] | None:
    """The first clause of ``spec`` that ``version`` does not satisfy, as (operator, version it
    names), or None; raises ``ValueError`` for a spec it cannot read."""
    have = _parse(version)
    for clause in spec.split(","):
        match = _CLAUSE.match(clause)
        if not match:
            raise ValueError(f'cannot read version range {spec!r} (write it like ">=0.1,<0.2")')
        op, text = match.group(1) or "==", match.group(2)
        want = _parse(text)
        if op == "~=":
            kept = len(text.split(".")) - 1
            ok = have >= want and have[:kept] == want[:kept]
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
            return op, want
    return None


def compatible_range(version: str = API_VERSION) -> str:
    """The ``CRAB_API`` a plugin written against ``version`` declares: up to the next minor while
    crab is 0.x (``">=0.1,<0.2"``), up to the next major after (``">=1.2,<2"``)."""
    major, minor = _parse(version)[:2]
    return f">={major}.{minor},<0.{minor + 1}" if major == 0 else f">={major}.{minor},<{major + 1}"


def check_range(spec: str, version: str = API_VERSION) -> bool:
    """Whether ``version`` satisfies ``spec``, a comma list like ``">=0.1,<0.2"``.

    Raises ``ValueError`` for a spec it cannot read.
    """
    return _unmet(spec, version) is None


def api_problem(wanted: object, version: str = API_VERSION) -> str | None:
    """Why a plugin's ``CRAB_API`` does not fit this crab, saying which side to change; None if it fits."""
    if not isinstance(wanted, str):
        return (
            f'CRAB_API must be a version range string such as ">=0.1,<0.2", not {type(wanted).__name__} '
            f"{wanted!r}; quote it in the plugin"
        )
    try:
        unmet = _unmet(wanted, version)
    except ValueError as exc:
        return f"CRAB_API: {exc}"
    if unmet is None:
        return None
    op, want = unmet
    have = _parse(version)
    if op.startswith(">") and OLD_NUMBERING[0] <= want < OLD_NUMBERING[1] and have < OLD_NUMBERING[0]:
        return (
            f"was written for crab's old plugin API numbering ({wanted}, before crab-core 0.1): port it to this "
            f'crab-core\'s API {version} (docs/api.md, "Changed in 0.1") and declare '
            f'CRAB_API = "{compatible_range(version)}"'
        )
    if op.startswith(">") or (op in ("==", "~=") and want > have):
        return (
            f"needs crab plugin API {wanted} but this crab-core provides {version}: upgrade crab-core "
            f"(pip install -U crab-core), or use a release of the plugin written for API {version}"
        )
    if op.startswith("<") or (op in ("==", "~=") and want < have):
        return (
            f"was written for crab plugin API {wanted} and this crab-core provides {version}: upgrade the "
            "plugin to a release for this API, or use an older crab-core"
        )
    return f"CRAB_API {wanted} excludes this crab-core's plugin API {version}; change the plugin's CRAB_API"
