"""Event redaction benchmark: what masking every delivered event costs (crab._secrets.redaction).

Every event the loop delivers passes ``EventRedactor.events`` (secrets masked, nested; text and
thinking streams held back at a possible secret start; lone surrogates replaced). This runs a
turn-like mix of events through it, side by side in one run:

- redaction alone: the redactor with no secret (only the walk and the UTF-8 check), with five
  known keys of realistic length none of which occurs (the common case), and with one of them
  in some deltas (split across two), a tool call's arguments and a tool result;
- ``--output jsonl`` per event: ``event_to_dict`` + ``json_text`` without redaction, and after
  the redactor with 0 and with 5 secrets: the cost as a user sees it.

Figures are events per second and the ratio to the first row of each group.

    python bench/redaction.py [--turns 200] [--runs 5]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from crab._contracts.events import (
    Event,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultEvent,
    TurnEnded,
    TurnStarted,
    UsageEvent,
)
from crab._contracts.messages import ToolCall, Usage
from crab._secrets.redaction import EventRedactor, Redactor
from crab._values.event_json import event_to_dict
from crab._values.utf8 import json_text

WORDS = [
    "the",
    "crab",
    "plugin",
    "stream",
    "parser",
    "token",
    "delta",
    "model",
    "tool",
    "call",
    "result",
    "value",
    "is",
    "of",
    "to",
    "and",
    "in",
]
SECRETS = [
    "sk-proj-" + "A1b2C3d4" * 12,
    "sk-ant-api03-" + "Zy9Xw8Vu" * 11,
    "ghp_" + "0123456789abcdefABCD" * 2,
    "xoxb-1234567890-" + "abcdEFGH" * 4,
    "12345:telegram-token-" + "QwErTy" * 5,
]


def turn(rnd: random.Random, leak: str | None) -> list[Event]:
    """One turn: 300 text deltas, 100 thinking deltas, 3 tool calls and results, usage, end."""
    events: list[Event] = [TurnStarted("s", "t", "do the thing")]
    for _ in range(100):
        events.append(ThinkingDelta(" ".join(rnd.choice(WORDS) for _ in range(2))))
    for i in range(3):
        args = {"path": f"src/{rnd.choice(WORDS)}.py", "pattern": rnd.choice(WORDS), "limit": 50}
        if leak and i == 0:
            args["command"] = f"curl -H 'Authorization: {leak}'"
        events.append(ToolCallEvent(ToolCall(f"c{i}", "grep", args)))
        lines = [" ".join(rnd.choice(WORDS) for _ in range(8)) for _ in range(40)]
        if leak and i == 1:
            lines[20] = f"API_KEY={leak}"
        events.append(ToolResultEvent(f"c{i}", "grep", "\n".join(lines), duration_ms=3.0))
    for i in range(300):
        piece = rnd.choice(WORDS) + " "
        if leak and i in (100, 250):
            piece = leak[:10]  # split across two deltas
            events.append(TextDelta(piece))
            piece = leak[10:] + " "
        events.append(TextDelta(piece))
    events.append(UsageEvent(Usage(1200, 400, cost=0.01)))
    events.append(TurnEnded("s", "t", "end", "the answer " * 50, Usage(1200, 400, cost=0.01)))
    return events


def measure(events: list[Event], handle: Callable[[Event], object], runs: int) -> float:
    """Best events per second over ``runs``."""
    rates = []
    for _ in range(runs):
        started = time.perf_counter()
        for event in events:
            handle(event)
        rates.append(len(events) / (time.perf_counter() - started))
    return max(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rnd = random.Random(7)
    clean = [e for _ in range(args.turns) for e in turn(rnd, None)]
    leaking = [e for _ in range(args.turns) for e in turn(rnd, SECRETS[1])]
    none = EventRedactor(Redactor([]))
    five = EventRedactor(Redactor(SECRETS))
    five_leak = EventRedactor(Redactor(SECRETS))

    def jsonl(redactor: EventRedactor | None) -> Callable[[Event], None]:
        def handle(event: Event) -> None:
            for shown in redactor.events(event, "s") if redactor is not None else [event]:
                json_text(event_to_dict(shown))

        return handle

    groups = [
        (
            "redaction alone",
            [
                ("0 secrets", measure(clean, lambda e: none.events(e, "s"), args.runs)),
                ("5 secrets", measure(clean, lambda e: five.events(e, "s"), args.runs)),
                ("5 secrets, leaking", measure(leaking, lambda e: five_leak.events(e, "s"), args.runs)),
            ],
        ),
        (
            "--output jsonl per event",
            [
                ("no redaction", measure(clean, jsonl(None), args.runs)),
                ("0 secrets", measure(clean, jsonl(EventRedactor(Redactor([]))), args.runs)),
                ("5 secrets", measure(clean, jsonl(EventRedactor(Redactor(SECRETS))), args.runs)),
            ],
        ),
    ]
    print(f"{len(clean):,} events ({args.turns} turns), best of {args.runs} runs")
    for title, rows in groups:
        print(f"\n{title:<26} {'events/s':>12} {'ratio':>7}")
        base = rows[0][1]
        for name, rate in rows:
            print(f"  {name:<24} {rate:>12,.0f} {rate / base:>7.2f}")


if __name__ == "__main__":
    main()
