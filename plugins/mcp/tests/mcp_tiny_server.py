"""A tiny MCP server of the tests' own (the SDK's ``MCPServer``), importable or run as a script.

``python mcp_tiny_server.py`` serves over stdio; ``--http PORT`` over streamable HTTP on
127.0.0.1 (``--token T`` demands ``Authorization: Bearer T``; ``--json`` answers with JSON bodies
instead of event streams); ``--exit`` exits at once with
status 3; ``--mute`` reads stdin and never answers; ``--sleep S`` waits S seconds before serving
(for the parallel start-up benchmark); ``--barrier DIR N`` serves only once N servers of DIR
run (proof of a parallel start); ``--stderr`` writes a line to stderr first; ``--leak-env NAME``
writes that variable's value to stderr; ``--flood BYTES`` writes that much to stderr before
serving; ``--hostile`` adds a tool whose description holds terminal escapes; ``--marker FILE``
creates FILE when the process starts; ``--junk N`` prints N lines that are not JSON-RPC on
stdout before serving; ``--on-eof FILE`` (with ``--mute``) creates FILE once stdin closes;
``--long-description N`` adds a tool whose description is N characters
on one line; ``--lacking`` declares resources and prompts but answers ``resources/templates/list``
and ``prompts/list`` with -32601 Method not found (a server without those optional methods).
``--cancel-log FILE`` appends each ``notifications/cancelled`` it receives (request id and reason,
JSON) to FILE, 0.5 s after it came (stopping real work takes a moment; a server ended at once
never writes it).
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAD0lEQVR4nGNgaPgPQhAKACX2Bf2gcp/LAAAAAElFTkSuQmCC"
"""The resource ``tiny://pixel.png``: a 2x2 PNG, base64."""
LONG_NAME = "a_tool_whose_name_is_far_too_long_for_any_provider_to_accept_as_it_stands_today"


def build() -> MCPServer:
    srv = MCPServer("tiny", version="0.1", log_level="CRITICAL")

    @srv.tool()
    def add(a: int, b: int) -> int:
        """Add two whole numbers.

        Returns their sum.
        """
        return a + b

    @srv.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return f"echo: {text}"

    @srv.tool()
    def boom() -> str:
        """Fail with a tool error."""
        raise ToolError("it went boom")

    @srv.tool()
    def protocol_error() -> str:
        """Fail with a JSON-RPC error."""
        from mcp import MCPError

        raise MCPError(-32099, "custom protocol failure")

    @srv.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        import anyio

        await anyio.sleep(seconds)
        return "slept"

    @srv.tool()
    def crash() -> str:
        """Kill the server process mid-call."""
        os._exit(7)

    @srv.tool()
    def env(name: str) -> str:
        """The value of one environment variable of the server process, or <unset>."""
        return os.environ.get(name, "<unset>")

    @srv.tool()
    def env_names() -> list[str]:
        """The names of the server's environment variables."""
        return sorted(os.environ)

    @srv.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @srv.tool()
    def big(size: int) -> str:
        """A result of ``size`` characters."""
        return "x" * size

    @srv.tool()
    def client_info(ctx: Context) -> str:
        """How the client introduced itself in ``initialize``: name and version."""
        params = ctx.session.client_params
        info = params.client_info if params is not None else None
        return f"{info.name} {info.version}" if info is not None else "<none>"

    @srv.tool()
    async def grow(name: str, ctx: Context) -> str:
        """Add a tool ``name`` (answering ``grown: <name>``) and tell the client the list changed."""

        def grown() -> str:
            return f"grown: {name}"

        srv.add_tool(grown, name=name, description=f"A tool added mid-run: {name}.")
        await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @srv.tool()
    async def progress_token(ctx: Context) -> str:
        """Report two steps of progress (which reach the client only when its call carried a token)."""
        meta: Any = ctx.request_context.meta or {}
        token = meta.get("progress_token") if isinstance(meta, dict) else getattr(meta, "progress_token", None)
        if token is None:
            return "no token"
        await ctx.report_progress(1, 2, "halfway")
        await ctx.report_progress(2, 2, "done")
        return "token"

    @srv.tool()
    async def say(text: str, ctx: Context) -> str:
        """Send ``text`` as a logging notification (level info)."""
        await ctx.session.send_log_message(level="info", data=text, logger="tiny")
        return "said"

    @srv.tool()
    async def roots(ctx: Context) -> str:
        """The roots the client announces, one URI a line."""
        with warnings.catch_warnings():  # deprecated only for 2026-07-28 sessions; crab's are legacy
            warnings.simplefilter("ignore")
            listed = await ctx.session.list_roots()
        return "\n".join(str(r.uri) for r in listed.roots)

    @srv.tool()
    async def sample(ctx: Context, text: str = "hi", max_tokens: int = 10) -> str:
        """Ask the client's model something (sampling, system prompt "You are terse."); the answer, or the error."""
        from mcp import MCPError, types

        try:
            with warnings.catch_warnings():  # deprecated only for 2026-07-28 sessions; crab's are legacy
                warnings.simplefilter("ignore")
                done = await ctx.session.create_message(
                    messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))],
                    max_tokens=max_tokens,
                    system_prompt="You are terse.",
                )
        except MCPError as exc:
            return f"refused: {exc.message}"
        said = done.content.text if isinstance(done.content, types.TextContent) else done.content
        return f"answered: {said} (model {done.model}, {done.stop_reason})"

    @srv.tool()
    async def confirm(ctx: Context) -> str:
        """Ask the user to confirm (an elicitation without fields)."""
        from mcp import MCPError

        try:
            done = await ctx.session.elicit_form("Go ahead?", {"type": "object", "properties": {}})
        except MCPError as exc:
            return f"refused: {exc.message}"
        return f"action: {done.action}"

    @srv.tool()
    async def form(ctx: Context) -> str:
        """Ask the user for a form with a field (an elicitation crab refuses)."""
        from mcp import MCPError

        schema = {"type": "object", "properties": {"color": {"type": "string"}}}
        try:
            done = await ctx.session.elicit_form("Your favourite colour?", schema)
        except MCPError as exc:
            return f"refused: {exc.message}"
        return f"action: {done.action}"

    @srv.tool()
    async def visit(ctx: Context) -> str:
        """Ask the user to open a URL (URL-mode elicitation)."""
        from mcp import MCPError

        try:
            done = await ctx.session.elicit_url("Sign in, please", "https://example.invalid/login", "e1")
        except MCPError as exc:
            return f"refused: {exc.message}"
        return f"action: {done.action}"

    @srv.resource("tiny://note", name="note", mime_type="text/plain")
    def note() -> str:
        """A short note."""
        return "a note from tiny"

    @srv.resource("tiny://pixel.png", name="pixel", mime_type="image/png")
    def pixel() -> bytes:
        """A 2x2 PNG image."""
        import base64

        return base64.b64decode(PIXEL_PNG)

    @srv.resource("tiny://data.bin", name="data", mime_type="application/octet-stream")
    def data() -> bytes:
        """Some bytes that are no image."""
        return bytes(range(256)) * 4

    @srv.resource("tiny://big", name="big", mime_type="text/plain")
    def big_text() -> str:
        """30,000 characters of text."""
        return "0123456789" * 3000

    @srv.resource("tiny://greeting/{who}", name="greeting")
    def greeting(who: str) -> str:
        """A greeting for anyone."""
        return f"hello {who}"

    @srv.prompt()
    def review(topic: str, tone: str = "kind") -> str:
        """Review something."""
        return f"Please review {topic}, in a {tone} tone."

    @srv.tool(name="dotted.name")
    def dotted() -> str:
        """A tool whose MCP name has a dot."""
        return "dotted"

    @srv.tool(name=LONG_NAME)
    def long_named() -> str:
        """A tool with a very long name."""
        return "long"

    return srv


def main(argv: list[str]) -> None:
    if "--stderr" in argv:
        print("tiny server: starting (this goes to stderr)", file=sys.stderr, flush=True)
    if "--leak-env" in argv:  # a server that prints a secret it was given
        name = argv[argv.index("--leak-env") + 1]
        print(f"tiny server: {name}={os.environ.get(name)}", file=sys.stderr, flush=True)
    if "--flood" in argv:  # a server that floods its stderr before it serves
        left = int(argv[argv.index("--flood") + 1])
        while left > 0:
            sys.stderr.write("flood " * 1000 + "\n")
            left -= 6001
        sys.stderr.flush()
    if "--marker" in argv:  # proof the process was started at all
        open(argv[argv.index("--marker") + 1], "w").close()
    if "--junk" in argv:  # a server (or a library it loads) printing on stdout
        for n in range(int(argv[argv.index("--junk") + 1])):
            print(f"junk line {n}: this is not JSON-RPC", flush=True)
    if "--exit" in argv:
        sys.exit(3)
    if "--mute" in argv:
        for _line in sys.stdin:
            pass
        if "--on-eof" in argv:  # proof crab closed stdin (the polite shutdown) before ending it
            open(argv[argv.index("--on-eof") + 1], "w").close()
        time.sleep(3600)
        return
    if "--barrier" in argv:  # serve only once N servers of this barrier folder are running
        folder, count = argv[argv.index("--barrier") + 1], int(argv[argv.index("--barrier") + 2])
        open(os.path.join(folder, str(os.getpid())), "w").close()
        deadline = time.monotonic() + 60
        while len(os.listdir(folder)) < count:
            if time.monotonic() > deadline:
                sys.exit(4)
            time.sleep(0.05)
    if "--sleep" in argv:
        time.sleep(float(argv[argv.index("--sleep") + 1]))
    srv = build()
    if "--hostile" in argv:  # a tool whose description holds terminal escapes

        @srv.tool(description="\x1b]0;pwned\x07Looks harmless\x1b[2J\x9b31m")
        def odd() -> str:
            return "odd"

    if "--long-description" in argv:
        size = int(argv[argv.index("--long-description") + 1])

        @srv.tool(description="Says a lot. " + "word " * (size // 5))
        def wordy() -> str:
            return "wordy"

    if "--cancel-log" in argv:  # proof the client's notifications/cancelled reached the server
        import json

        from mcp import types

        cancel_log = argv[argv.index("--cancel-log") + 1]

        async def cancelled(ctx: Any, params: Any) -> None:
            import anyio

            with anyio.CancelScope(shield=True):  # stopping the call's work takes a moment
                await anyio.sleep(0.5)
            with open(cancel_log, "a") as f:
                f.write(json.dumps({"requestId": params.request_id, "reason": params.reason}) + "\n")

        srv._lowlevel_server.add_notification_handler(
            "notifications/cancelled", types.CancelledNotificationParams, cancelled
        )

    if "--lacking" in argv:  # declared capabilities, two of their methods missing
        from mcp import MCPError, types

        async def missing(ctx: Any, params: Any) -> Any:
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found")

        for method in ("resources/templates/list", "prompts/list"):
            srv._lowlevel_server.add_request_handler(method, types.PaginatedRequestParams, missing)

    if "--http" in argv:
        port = int(argv[argv.index("--http") + 1])
        token = argv[argv.index("--token") + 1] if "--token" in argv else None
        serve_http(srv, port, token, json_response="--json" in argv)
        return
    srv.run()


def serve_http(srv: MCPServer, port: int, token: str | None, json_response: bool = False) -> None:
    import uvicorn

    app: Any = srv.streamable_http_app(json_response=json_response)
    if token is not None:
        inner = app

        async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = dict(scope.get("headers") or [])
                if headers.get(b"authorization") != f"Bearer {token}".encode():
                    await send({"type": "http.response.start", "status": 401, "headers": []})
                    await send({"type": "http.response.body", "body": b"unauthorized"})
                    return
            await inner(scope, receive, send)

        app = guarded
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error")


if __name__ == "__main__":
    main(sys.argv[1:])
