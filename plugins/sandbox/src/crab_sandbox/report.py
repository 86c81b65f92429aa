"""Honest reporting: the line added to a sandboxed command's result when the sandbox stopped it.

A refused write, a hidden file, the missing network, an unset variable, a covered host socket or a
background process ended with its command each look like an ordinary failure from inside; the note says which one
it was, so neither the model nor the user is left guessing.
"""

from __future__ import annotations

import re
from pathlib import Path

from crab_sandbox.policy import Facts
from crab_sandbox.settings import user_home

READ_ONLY = re.compile(r"Read-only file system|EROFS")
NETWORK = re.compile(
    r"Network is unreachable|ENETUNREACH|Connection refused|ECONNREFUSED|Couldn't connect to server|"
    r"Could not resolve host|Temporary failure in name resolution|Name or service not known|"
    r"No address associated with hostname|getaddrinfo|nodename nor servname",
    re.IGNORECASE,
)
BACKGROUND = re.compile(r"(?:^|[^&>|])&(?:\s|$|\))|\bnohup\b|\bsetsid\b|\bdisown\b|\bdaemon\b")


def _forms(path: Path, home: Path | None) -> list[str]:
    """How a command may name ``path``: as it is, with ``~/`` or ``$HOME/``."""
    text = str(path)
    forms = [text]
    if home is not None and home in path.parents:
        rest = path.relative_to(home).as_posix()
        forms += [f"~/{rest}", f"$HOME/{rest}", f"${{HOME}}/{rest}"]
    return forms


def _short(path: Path, home: Path | None) -> str:
    return f"~/{path.relative_to(home).as_posix()}" if home is not None and home in path.parents else str(path)


def note(facts: Facts, command: str, output: str, home: Path | None = None, *, background: bool = False) -> str | None:
    """One line naming what the sandbox refused this command, or None when nothing points to it.

    ``background``: the tool can start a command that outlives its call (crab-tools-basic's
    ``bash`` with ``background: true``), which the note then points to.
    """
    home = home or user_home()
    seen = f"{command}\n{output}"
    said: list[str] = []
    hidden = [p for p in facts.hidden if any(form in seen for form in _forms(p, home))]
    if hidden:
        names = ", ".join(_short(p, home) for p in hidden)
        said.append(f"{names} {'is' if len(hidden) == 1 else 'are'} hidden (secrets are not readable in the sandbox)")
    if READ_ONLY.search(output):
        roots = ", ".join(str(p) for p in facts.writable) or "nothing"
        said.append(f"writing outside the workspace is refused (writable: {roots} and a private /tmp)")
    if not facts.network and NETWORK.search(output):
        said.append("the network is off for this command (a loopback of its own only; no host, no LAN)")
    unset = [name for name in facts.unset if re.search(rf"\b{re.escape(name)}\b", command)]
    if unset:
        said.append(f"{', '.join('$' + n for n in unset)} not passed into the sandbox (secret variables are unset)")
    sockets = [p for p in facts.sockets if str(p) in seen]
    if sockets:
        names = ", ".join(str(p) for p in sockets)
        said.append(
            f"{names}: host sockets are covered in the sandbox ([plugins.sandbox] unix_sockets lets one through)"
        )
    if BACKGROUND.search(command):
        keep = (
            "to keep one running for later calls, start it with background: true (bash_output reads it, "
            "bash_kill ends it)"
            if background
            else "nothing started in one call runs on into the next"
        )
        said.append(
            "processes a command leaves running end when it exits (the sandbox has its own pid namespace); " + keep
        )
    if not said:
        return None
    return "[sandbox: " + "; ".join(said) + "]"
