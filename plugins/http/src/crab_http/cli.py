"""``crab http token create|list|revoke``: each prints what it did in one line (or the token)."""

from __future__ import annotations

import sys
import time

import crab

from crab_http.tokens import TokenStore


def create_token(name: str) -> int:
    store = TokenStore()
    try:
        token = store.create(name)
    except crab.CrabError as exc:
        print(f"crab: {exc}", file=sys.stderr)
        return 2
    print(token)
    print(
        f"token {name!r} created: it is shown only now, keep it secret (stored hashed in {store.path})",
        file=sys.stderr,
    )
    return 0


def list_tokens() -> int:
    try:
        found = TokenStore().list()
    except crab.CrabError as exc:
        print(f"crab: {exc}", file=sys.stderr)
        return 2
    if not found:
        print("no tokens: create one with `crab http token create NAME`")
    for info in found:
        print(f"{info.name}\tcreated {time.strftime('%Y-%m-%d %H:%M', time.localtime(info.created))}")
    return 0


def revoke_token(name: str) -> int:
    try:
        gone = TokenStore().revoke(name)
    except crab.CrabError as exc:
        print(f"crab: {exc}", file=sys.stderr)
        return 2
    if not gone:
        print(f"crab: no token named {name!r} (see `crab http token list`)", file=sys.stderr)
        return 2
    print(f"token {name!r} revoked")
    return 0
