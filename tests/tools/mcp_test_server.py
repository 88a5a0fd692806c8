"""A real MCP server (official ``mcp`` SDK, low-level Server) with a 45-tool catalogue, over stdio.

Every ``tools/call`` answers ``called <name> with <arguments>``, so a test can
see the call reached the upstream. Paginated by 20 to exercise ``nextCursor``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import mcp_types as types  # noqa: E402
from mcp.server.lowlevel import Server  # noqa: E402
from mcp.server.stdio import stdio_server  # noqa: E402

from tests.tools.mcp_catalog import tool_dicts  # noqa: E402

PAGE = 20
TOOLS = [types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"]) for t in tool_dicts()]


async def list_tools(ctx, params):
    cursor = int(params.cursor) if params is not None and getattr(params, "cursor", None) else 0
    page = TOOLS[cursor: cursor + PAGE]
    nxt = str(cursor + PAGE) if cursor + PAGE < len(TOOLS) else None
    return types.ListToolsResult(tools=page, next_cursor=nxt)


async def call_tool(ctx, params):
    names = {t.name for t in TOOLS}
    if params.name not in names:
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"unknown tool {params.name}")], is_error=True)
    text = f"called {params.name} with {json.dumps(params.arguments or {}, sort_keys=True)}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("scalpel-test-catalog", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
