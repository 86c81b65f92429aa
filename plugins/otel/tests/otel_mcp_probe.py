"""An MCP server of crab-otel's end-to-end test (the SDK's ``MCPServer``, over stdio): its one
tool answers with the W3C trace context the call carried in ``params._meta`` (and whether the
progress token crab-mcp always sends is still there beside it)."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

srv = MCPServer("probe", version="0.1", log_level="CRITICAL")


@srv.tool()
def trace_probe(ctx: Context) -> str:
    """Say which trace context this call carried."""
    meta: Any = ctx.request_context.meta or {}
    found = dict(meta) if isinstance(meta, dict) else dict(getattr(meta, "__dict__", {}))
    progress = found.get("progress_token", found.get("progressToken"))
    return json.dumps({"traceparent": found.get("traceparent"), "progress": progress is not None})


if __name__ == "__main__":
    srv.run()
