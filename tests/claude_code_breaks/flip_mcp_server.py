"""A stdio MCP server whose tool list grows when its ``flip`` tool is called: a real MCP
tool-list change mid-session, for ``test_miss_causes_tui.py``.

    python flip_mcp_server.py STATE

Lists ``flip`` and ``probe``; after ``flip`` has been called (``STATE`` exists) also ``gauge``.
Each ``tools/list`` appends a line to ``STATE.lists``, so the test sees when the client re-listed.

Why the listen handler: at protocol 2026-07-28 (what Claude Code 2.1.332 negotiates) change
notifications ride only on ``subscriptions/listen`` streams, and a server advertises
``tools.listChanged`` only when it serves that method; the older handshake-era notification is
sent too, for a client that negotiates an older version.
"""

import sys
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

STATE = Path(sys.argv[1])
LISTS = STATE.with_suffix(".lists")
BUS = InMemorySubscriptionBus()


def _tools() -> list[types.Tool]:
    schema = {"type": "object", "properties": {}}
    names = ["flip", "probe"] + (["gauge"] if STATE.exists() else [])
    return [types.Tool(name=n, description=f"The {n} tool.", input_schema=schema) for n in names]


async def list_tools(ctx, params):
    with LISTS.open("a") as f:
        f.write("list\n")
    return types.ListToolsResult(tools=_tools())


async def call_tool(ctx, params):
    if params.name == "flip" and not STATE.exists():
        STATE.write_text("on")
        await BUS.publish(ToolsListChanged())
        try:
            await ctx.session.send_tool_list_changed()
        except Exception:  # a 2026-07-28 session has no such notification outside a listen stream
            pass
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name} ok")])


server = Server("flipper", on_list_tools=list_tools, on_call_tool=call_tool,
                on_subscriptions_listen=ListenHandler(BUS))


async def main() -> None:
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options(NotificationOptions(tools_changed=True)))


anyio.run(main)
