"""Lone surrogates never crash a hash, a cut or a JSON serialiser (crab._contracts.messages helpers)."""

from __future__ import annotations

import json

from crab._builtin.loop_guard import LoopGuard, result_hash, signature
from crab._contracts.truncate import OutputLimit
from crab._values.truncate import truncate
from crab._values.utf8 import hash_bytes, json_text, valid_text


def test_valid_text_replaces_only_lone_surrogates():
    assert valid_text("plain é 😀") == "plain é 😀"
    assert valid_text("x\udcff\ud800y") == "x\ufffd\ufffdy"
    long = "line of a file\n" * 4000
    assert valid_text(long) is long  # ASCII text is given back as it is (no copy)
    assert valid_text(long + "\udcff") == long + "\ufffd"  # a lone surrogate after 60 KB of ASCII


def test_json_text_is_always_valid_utf8():
    text = json_text({"path": "x\udcff.txt", "k\ud800": ["\udc80"]})
    assert json.loads(text.encode("utf-8")) == {"path": "x\ufffd.txt", "k\ufffd": ["\ufffd"]}


def test_hashing_keeps_distinct_texts_distinct():
    assert hash_bytes("x\udcff") != hash_bytes("x\ufffd") != hash_bytes("x\\udcff")
    assert signature("read", {"path": "x\udcff"}) != signature("read", {"path": "x\udcfe"})
    assert result_hash("bad \udcff") != result_hash("bad \ufffd")


def test_the_loop_guard_counts_repeats_of_surrogate_arguments():
    guard = LoopGuard()
    for _ in range(3):
        guard.record("read", {"path": "x\udcff.txt"}, "missing \udcff")
    assert guard.check("read", {"path": "x\udcff.txt"}).action == "block"


def test_truncate_counts_and_cuts_text_with_surrogates():
    text = "name-\udcff.txt\n" * 100
    kept, cut = truncate(text, OutputLimit(lines=10, bytes=10_000))
    assert cut is not None and kept == "name-\udcff.txt\n" * 10
    head, _ = truncate("\udcff" * 50, OutputLimit(bytes=10))
    assert head == "\udcff" * 3  # three whole 3-byte sequences, never a split one
    tail, _ = truncate("é" + "\udcff" * 5, OutputLimit(bytes=7, keep="tail"))
    assert tail == "\udcff" * 2
