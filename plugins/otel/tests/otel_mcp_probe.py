"""An MCP server of crab-otel's end-to-end test (the SDK's ``MCPServer``, over stdio): its one
tool answers with the W3C trace context the call carried in ``params._meta``."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

srv = MCPServer("probe", version="0.1", log_level="CRITICAL")


@srv.tool()
def trace_probe(ctx: Context) -> str:
    """Say which trace context this call carried."""
    meta: Any = ctx.request_context.meta or {}
    found = meta.get("traceparent") if isinstance(meta, dict) else getattr(meta, "traceparent", None)
    return json.dumps({"traceparent": found})


if __name__ == "__main__":
    srv.run()
