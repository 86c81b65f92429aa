"""``[plugins.temporal]``: where Temporal is and how much one worker takes on, read once."""

from __future__ import annotations

from dataclasses import dataclass, field

import crab

from crab_temporal import environ

NAME = "temporal"


def config_table() -> crab.ConfigTable:
    return crab.ConfigTable(
        NAME,
        (
            crab.Setting("address", "str", "127.0.0.1:7233", "Temporal's frontend, host:port", trust_only=True),
            crab.Setting("namespace", "str", "default", "the Temporal namespace turns run in", trust_only=True),
            crab.Setting(
                "task_queue",
                "str",
                "crab",
                "the task queue workers poll and turns are sent to (it picks the workers, and so their permissions)",
                trust_only=True,
            ),
            crab.Setting("tls", "bool", False, "connect with TLS (Temporal Cloud)", trust_only=True),
            crab.Setting(
                "api_key",
                "str",
                doc="Temporal Cloud API key (CRAB_TEMPORAL_API_KEY wins); never printed or stored",
                trust_only=True,
            ),
            crab.Setting(
                "max_concurrent_activities",
                "int",
                10,
                "tool calls one worker runs at once, and as many local steps (model calls, hooks, records)",
                minimum=1,
            ),
            crab.Setting(
                "max_concurrent_turns", "int", 10, "workflow tasks (turns advancing) one worker runs at once", minimum=1
            ),
            crab.Setting(
                "heartbeat",
                "float",
                10.0,
                "seconds between a running step's heartbeats: a worker silent for 3 of them is taken for dead",
                minimum=0.1,
            ),
            crab.Setting(
                "question_wait",
                "float",
                300.0,
                "seconds a worker's question waits for the user's answer (no client: then the call is refused)",
                above=0,
            ),
        ),
        doc="turns on Temporal: each model call and tool call a durable activity, on any number of workers",
    )


@dataclass(frozen=True)
class TemporalSettings:
    address: str = "127.0.0.1:7233"
    namespace: str = "default"
    task_queue: str = "crab"
    tls: bool = False
    api_key: str | None = field(default=None, repr=False)
    max_concurrent_activities: int = 10
    max_concurrent_turns: int = 10
    heartbeat: float = 10.0
    question_wait: float = 300.0

    @classmethod
    def from_config(cls, config: crab.Config) -> TemporalSettings:
        values = config.plugin_settings(NAME)
        return cls(
            address=checked_address(str(values.get("address") or cls.address)),
            namespace=str(values.get("namespace") or cls.namespace),
            task_queue=str(values.get("task_queue") or cls.task_queue),
            tls=bool(values.get("tls", False)),
            api_key=environ.api_key() or values.get("api_key") or None,
            max_concurrent_activities=int(values.get("max_concurrent_activities") or 10),
            max_concurrent_turns=int(values.get("max_concurrent_turns") or 10),
            heartbeat=float(values.get("heartbeat") or 10.0),
            question_wait=float(values.get("question_wait") or 300.0),
        )


def checked_address(address: str) -> str:
    """``address`` as temporalio takes it; a URL is a ``ConfigError`` here (temporalio would warn
    with lines of its own source, then fail to connect), and so is a ``user:password@`` before
    host:port, which every line naming the address would print (crab knows no such secret to mask)."""
    if "://" not in address and "@" not in address:
        return address
    if "://" not in address:
        host_port = address.rpartition("@")[2]
        raise crab.ConfigError(
            "[plugins.temporal] address takes host:port, with no user or password before an @ (write "
            f"{host_port}; Temporal Cloud's key goes in [plugins.temporal] api_key or {environ.API_KEY})"
        )
    from urllib.parse import urlsplit

    try:
        host, port = urlsplit(address).hostname, urlsplit(address).port
    except ValueError:  # a port that is not a number
        host, port = None, None
    # Never the URL itself: its user:password part may be a secret crab does not know.
    instead = f" (write {host}:{port or 7233})" if host else ""
    raise crab.ConfigError(f"[plugins.temporal] address takes host:port (such as 127.0.0.1:7233), not a URL{instead}")
