"""LSP's framing (``crab_lsp.rpc.Framer``, sans-IO) and a server that breaks it: one line, and the
server is ended rather than read on."""

from __future__ import annotations

import json
import sys

import pytest
from crab.events import ToolResultEvent
from crab.testing import AgentHarness
from crab_lsp import LspPlugin
from crab_lsp.rpc import MAX_FRAME, Framer, ProtocolError
from lsp_support import FakeWrite


def _frame(message: object) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_frames_split_anywhere_and_joined_come_out_whole():
    data = _frame({"id": 1, "result": "é"}) + _frame({"method": "x"})
    for cut in range(1, len(data)):
        framer = Framer()
        assert framer.feed(data[:cut]) + framer.feed(data[cut:]) == [{"id": 1, "result": "é"}, {"method": "x"}]


def test_encode_is_what_feed_reads():
    message = {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"rootUri": "file:///é"}}
    assert Framer().feed(Framer.encode(message)) == [message]


@pytest.mark.parametrize(
    "data",
    [
        b"Content-Length: x\r\n\r\n{}",
        b"Content-Type: text\r\n\r\n{}",
        b"Content-Length: %d\r\n\r\n" % (MAX_FRAME + 1),
        b"Content-Length: 2\r\n\r\n{x",
        b"hello " * 2000,
    ],
)
def test_broken_framing_is_a_protocol_error(data):
    with pytest.raises(ProtocolError):
        Framer().feed(data)


def test_a_server_that_prints_noise_is_ended_with_one_line(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    noise = "import sys\nsys.stdout.write('not lsp ' * 5000)\nsys.stdout.flush()\nsys.stdin.read()\n"
    script = tmp_path / "noise.py"
    script.write_text(noise)
    servers = {"noisy": {"command": sys.executable, "args": [str(script)], "patterns": ["*.py"]}}
    replies = [[{"tool": "diagnostics", "args": {"path": "a.py"}}], [{"text": "d"}]]
    plugin = LspPlugin()
    harness = AgentHarness(
        replies,
        plugins={"lsp": plugin, "fake": FakeWrite(tmp_path)},
        config={"plugins.lsp.servers": servers},
        workspace=tmp_path,
    )
    try:
        harness.run("check")
        [result] = harness.events_of(ToolResultEvent)
        assert result.is_error
        assert result.content == "language server noisy is down: the server broke the protocol: a header without an end"
        assert plugin.lsp is not None
        assert not plugin.lsp.servers._running  # never kept
    finally:
        harness.close()
