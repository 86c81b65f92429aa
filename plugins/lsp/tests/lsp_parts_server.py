"""A language server that sends a file's diagnostics in two parts, as typescript-language-server
does (syntax at once, types a moment later): an empty list, then after ``DELAY`` one error. Real
LSP framing over stdio; answers ``initialize`` and ``shutdown``, ends on ``exit``. With ``--die``
it crashes instead when a file is opened (exit 3, one line on stderr)."""

from __future__ import annotations

import json
import sys
import time

DELAY = 0.3


def read() -> dict[str, object] | None:
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))


def send(message: dict[str, object]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def publish(uri: str, diagnostics: list[dict[str, object]]) -> None:
    send({"method": "textDocument/publishDiagnostics", "params": {"uri": uri, "diagnostics": diagnostics}})


while (message := read()) is not None:
    method = message.get("method")
    params = message.get("params") or {}
    if method == "initialize":
        send({"id": message["id"], "result": {"capabilities": {"textDocumentSync": 1}}})
    elif method == "shutdown":
        send({"id": message["id"], "result": None})
    elif method == "exit":
        break
    elif method == "textDocument/didOpen" and "--die" in sys.argv:
        print("crashed on open", file=sys.stderr, flush=True)
        sys.exit(3)
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        uri = params["textDocument"]["uri"]  # type: ignore[index]
        publish(uri, [])
        time.sleep(DELAY)
        where = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
        publish(uri, [{"range": where, "severity": 1, "message": "types came later", "source": "parts"}])
