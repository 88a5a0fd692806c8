"""``scalpel mcp [--max-tools N] [--hint TEXT] -- <upstream command ...>``: the MCP tools router."""

from __future__ import annotations

import argparse
import os

from scalpel_desktop.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp", help="Run an MCP server behind a router that lists only the relevant tools.",
        description="A stdio MCP proxy: starts the upstream MCP server given after `--`, answers tools/list with "
                    "the most relevant tools (local TF-IDF over names and descriptions, fed by the task hint and "
                    "recently called tools), adds scalpel_search_tools to reveal hidden ones, and relays every "
                    "tools/call. Use it as the command of an MCP server entry, e.g. "
                    "`scalpel mcp --hint 'github issues' -- npx -y @modelcontextprotocol/server-github`. "
                    "Each reveal changes the client's tool list, which re-writes its whole prompt cache once.")
    p.add_argument("--max-tools", type=int, default=None, metavar="N",
                   help="Tools listed before any search (default: setting mcp_max_tools, 15).")
    p.add_argument("--hint", default=None, metavar="TEXT",
                   help="The task, in a few words (default: $SCALPEL_MCP_HINT, else setting mcp_hint).")
    p.add_argument("--reveal-batch", type=int, default=5, metavar="N", help="Most tools one search reveals (default 5).")
    p.add_argument("--quiet", action="store_true", help="Log to the log file only, not to stderr.")
    p.add_argument("upstream", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                   help="The upstream MCP server's command line, after `--`.")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from scalpel_desktop.config import Config, ConfigError
    from scalpel_desktop.tools.router import recent
    from scalpel_desktop.tools.router.routing import Router
    from scalpel_desktop.tools.router.stdio import StdioRouter, make_logger

    command = list(args.upstream)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CliError("give the upstream MCP server's command after `--`, e.g. scalpel mcp -- python server.py")
    try:
        cfg = Config.load()
    except ConfigError as e:
        raise CliError(str(e)) from None
    hint = args.hint if args.hint is not None else os.environ.get("SCALPEL_MCP_HINT") or cfg.get("mcp_hint")
    max_tools = args.max_tools if args.max_tools is not None else cfg.get("mcp_max_tools")
    if max_tools < 1:
        raise CliError("--max-tools must be at least 1")
    logger = make_logger(to_stderr=not args.quiet)
    router = Router(hint=hint or "", recent=recent.load(command), max_tools=max_tools,
                    reveal_batch=args.reveal_batch, log=logger)
    try:
        return asyncio.run(StdioRouter(command, router).run())
    except FileNotFoundError as e:
        raise CliError(f"cannot start the upstream MCP server: {e}") from None
