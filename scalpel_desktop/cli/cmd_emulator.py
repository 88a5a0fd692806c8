"""``scalpel emulator``: the emulated upstream in the foreground, for manual trials."""

from __future__ import annotations

import argparse

from scalpel_desktop.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "emulator",
        help="Run the emulated Anthropic/OpenAI upstream (for trials and tests).",
        description="Run the emulated upstream on 127.0.0.1 in the foreground: /v1/messages (JSON and SSE), "
                    "/v1/messages/count_tokens, /v1/models, /v1/chat/completions, /v1/responses, billed by the "
                    "prompt-cache model, answered from a script. Control routes under /_emulator/ (requests, "
                    "fault, clock, script, clear). Point a client at it with ANTHROPIC_BASE_URL=URL or "
                    "OPENAI_BASE_URL=URL/v1, or point the proxy at it with SCALPEL_ANTHROPIC_UPSTREAM=URL.")
    p.add_argument("--port", type=int, default=0, help="Port to listen on (default: a free one).")
    p.add_argument("--script", default="default",
                   help="Named script: default, text, claude_code_session, tool_loop, parallel (default: default).")
    p.add_argument("--workdir", default=None,
                   help="Project directory for the claude_code_session script (default: the current directory).")
    p.add_argument("--prepare", action="store_true",
                   help="With claude_code_session: write the script's notes.txt and app.py into --workdir.")
    p.add_argument("--min-cacheable", type=int, default=None,
                   help="Minimum cacheable prefix in tokens for every model (default: the per-model table).")
    p.add_argument("--no-auth", action="store_true", help="Accept requests without an API key.")
    p.add_argument("--clock-file", metavar="PATH", default=None,
                   help="Share the clock through this file (SCALPEL_TEST_CLOCK_FILE; default: that variable, if "
                        "set): POST /_emulator/clock then moves every process started with "
                        "SCALPEL_TEST_CLOCK_FILE=PATH, the proxy included. A test setting, never for real use.")
    p.add_argument("--lookback", type=int, default=20, metavar="BLOCKS",
                   help="Blocks a breakpoint looks back for an earlier entry (undocumented: about 20; default 20).")
    p.add_argument("--refresh", choices=("each", "read"), default="each",
                   help="Which entries a hit refreshes (undocumented): each breakpoint's own (default) "
                        "or only the one read.")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import os

    from scalpel_desktop.emulator.runner import serve_forever
    from scalpel_desktop.emulator.scripts import NAMED, named_script, prepare_workdir
    from scalpel_desktop.emulator.server import Emulator

    if args.script not in NAMED:
        raise CliError(f"unknown script {args.script!r}; known: {', '.join(sorted(NAMED))}")
    if not 0 <= args.port <= 65535:
        raise CliError(f"--port {args.port}: must be between 0 and 65535")
    kwargs = {}
    if args.script == "claude_code_session":
        workdir = args.workdir or os.getcwd()
        if args.prepare:
            prepare_workdir(workdir)
        kwargs["workdir"] = workdir
    if args.clock_file:
        os.environ["SCALPEL_TEST_CLOCK_FILE"] = os.path.abspath(args.clock_file)
    emulator = Emulator(named_script(args.script, **kwargs), min_cacheable=args.min_cacheable,
                        require_auth=not args.no_auth, lookback=args.lookback, refresh=args.refresh,
                        shared_clock=True)

    def ready(url: str) -> None:
        print(f"scalpel emulator listening on {url}  (script: {args.script}; Ctrl-C stops)", flush=True)
        print(f"  ANTHROPIC_BASE_URL={url}   OPENAI_BASE_URL={url}/v1   requests: {url}/_emulator/requests",
              flush=True)
        shared = os.environ.get("SCALPEL_TEST_CLOCK_FILE")
        print(f"  clock: shared through SCALPEL_TEST_CLOCK_FILE={shared} (start the proxy with it too)" if shared
              else "  clock: its own (--clock-file PATH shares it with a proxy started with "
                   "SCALPEL_TEST_CLOCK_FILE=PATH)", flush=True)

    try:
        serve_forever(emulator, "127.0.0.1", args.port, on_ready=ready)
    except OSError as e:
        raise CliError(f"cannot listen on 127.0.0.1:{args.port}: {e.strerror or e}") from None
    except KeyboardInterrupt:
        return 0
    return 0
