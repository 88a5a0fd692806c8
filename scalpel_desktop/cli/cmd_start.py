"""``scalpel start | status | stop | pause | resume``: the proxy in the foreground and its controls.

``start`` runs the proxy until Ctrl-C, SIGTERM or ``scalpel stop``. The
upstreams come from the config file, then the environment
(``SCALPEL_ANTHROPIC_UPSTREAM``, ``SCALPEL_OPENAI_UPSTREAM``), then the flags:
each later one wins, and none of them is saved. The other commands talk to the
running proxy through its control API.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from scalpel_desktop.errors import CliError

ENV_UPSTREAMS = {"anthropic_upstream": "SCALPEL_ANTHROPIC_UPSTREAM", "openai_upstream": "SCALPEL_OPENAI_UPSTREAM"}
NOT_RUNNING_STATUS = 3  # like `systemctl status`: the program is not running


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "start",
        help="Run the proxy in the foreground.",
        description="Run the proxy on 127.0.0.1 in the foreground, with a live status line, until Ctrl-C, "
        "SIGTERM or `scalpel stop`. Upstreams: config file, then the environment variables "
        "SCALPEL_ANTHROPIC_UPSTREAM / SCALPEL_OPENAI_UPSTREAM, then these flags (later wins; nothing is saved).",
    )
    p.add_argument("--port", type=int, help="Port to listen on (default: the `port` setting, 4242).")
    p.add_argument("--anthropic-upstream", metavar="URL", help="Where Anthropic API requests go.")
    p.add_argument("--openai-upstream", metavar="URL", help="Where /openai/... requests go (prefix stripped).")
    p.add_argument("--quiet", action="store_true", help="No live status line.")
    p.set_defaults(func=_start)

    s = sub.add_parser(
        "status",
        help="Show whether the proxy runs, and its counts.",
        description="Show whether the proxy is running: port, pid, uptime, requests, tokens, errors, "
        "today's realized saving (the ledger's, since local midnight; unknown when the ledger cannot be read), "
        "what acts on requests now (surgery, the tool filter, recording) and every degraded state with its fix. "
        f"Exit status 0 when running, {NOT_RUNNING_STATUS} when not.",
    )
    s.add_argument("--json", action="store_true", help="Machine-readable output (running, port, pid, requests, ...).")
    s.set_defaults(func=_status)

    st = sub.add_parser(
        "stop",
        help="Stop the running proxy.",
        description="Stop the running proxy (through its control API) and wait until it has exited; a tray that ran it "
        "quits with it. With autopilot on it refuses: Claude Code's settings point at the proxy and its login service "
        "restarts it, so use `scalpel autopilot off` (settings restored first, then the service stopped and removed) "
        "or `scalpel pause` (pass-through, still serving).",
    )
    st.add_argument("--timeout", type=float, default=10.0, help="Seconds to wait for it to exit (default 10).")
    st.set_defaults(func=_stop)

    pa = sub.add_parser(
        "pause",
        help="Pass-through: forward everything unchanged.",
        description="Pause: the proxy keeps forwarding but changes nothing (pure pass-through). "
        "Applied live when the proxy runs; saved either way.",
    )
    pa.set_defaults(func=lambda a: _pause(True))
    re = sub.add_parser(
        "resume",
        help="End pass-through: apply the settings again.",
        description="Resume: the proxy applies its tier, policy and tool filter again. Applied live when the proxy runs; saved either way.",
    )
    re.set_defaults(func=lambda a: _pause(False))


# -- start ---------------------------------------------------------------------


def _overrides(args: argparse.Namespace) -> dict:
    out: dict = {}
    for key, env in ENV_UPSTREAMS.items():
        if os.environ.get(env):
            out[key] = os.environ[env]
    if args.anthropic_upstream:
        out["anthropic_upstream"] = args.anthropic_upstream
    if args.openai_upstream:
        out["openai_upstream"] = args.openai_upstream
    if args.port is not None:
        out["port"] = args.port
    return out


def _setup_logging() -> None:
    import logging

    from scalpel_desktop.paths import dirs
    from scalpel_desktop.private_files import PrivateRotatingFileHandler

    root = logging.getLogger("scalpel")
    root.setLevel(logging.INFO)
    err = logging.StreamHandler(sys.stderr)
    err.setLevel(logging.WARNING)
    err.setFormatter(logging.Formatter("\rscalpel: %(levelname)s: %(message)s"))
    root.addHandler(err)
    try:
        fh = PrivateRotatingFileHandler(dirs().logs / "proxy.log", maxBytes=1_000_000, backupCount=3)  # 0600
        fh.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(fh)
    except OSError:
        pass


def _start(args: argparse.Namespace) -> int:
    return serve_foreground(_overrides(args), quiet=args.quiet)


def serve_foreground(overrides: dict | None = None, quiet: bool = False, on_started=None) -> int:
    """Run the proxy here until Ctrl-C, SIGTERM or ``scalpel stop`` (``start``, and ``scalpel`` with no tray).

    ``on_started(runtime)`` runs once the proxy answers, before the banner."""
    import signal

    from scalpel_desktop.config import Config, ConfigError
    from scalpel_desktop.proxy.portcheck import PortInUse
    from scalpel_desktop.runtime import AlreadyRunning, Runtime

    try:
        rt = Runtime(Config.load(), overrides or {})
    except ConfigError as e:
        raise CliError(str(e)) from None
    _setup_logging()
    try:
        rt.start()
    except AlreadyRunning as e:
        raise CliError(str(e)) from None
    except PortInUse as e:
        raise CliError(str(e)) from None

    def on_again(signum, frame):  # noqa: ARG001 - stopping already: hurry it, never break it off
        rt.hurry()

    def on_first(signum, frame):  # noqa: ARG001
        _handle_stop_signals(on_again)  # before the stop starts: a second signal can never interrupt it
        raise KeyboardInterrupt

    previous = _handle_stop_signals(on_first)
    live = sys.stdout.isatty() and not quiet
    try:
        if on_started is not None:
            on_started(rt)
        _print_banner(rt)
        while not rt.wait(1.0):
            if live:
                sys.stdout.write("\r\033[K" + status_line(rt.status()))
                sys.stdout.flush()
    except KeyboardInterrupt:
        pass
    finally:
        _handle_stop_signals(on_again)  # (also when stopped by `scalpel stop`: Ctrl-C from here hurries)
        if live:
            sys.stdout.write("\n")
        rt.stop(timeout=5.0)
        for signum, handler in previous.items():  # a caller in this process (a test, the tray) keeps its own
            signal.signal(signum, handler)
    print("scalpel stopped.", flush=True)
    return 0


def _handle_stop_signals(handler) -> dict:
    """``handler`` for SIGINT (Ctrl-C) and SIGTERM; the handlers it replaced (none off the main thread).

    The first signal stops the proxy; one more while it stops (a second Ctrl-C, a service manager's
    second SIGTERM) only hurries the stop: every ledger row is still written or journaled, and the
    exit status stays 0."""
    import signal

    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, handler)
        except (ValueError, OSError):  # not the main thread
            pass
    return previous


def _print_banner(rt) -> None:
    base = f"http://127.0.0.1:{rt.port}"
    print(f"scalpel proxy listening on {base} (pid {os.getpid()})")
    print(f"  Anthropic clients (Claude Code): export ANTHROPIC_BASE_URL={base}")
    print(f"  OpenAI clients:                  export OPENAI_BASE_URL={base}/openai/v1")
    print(f"  upstreams: anthropic -> {rt.status()['anthropic_upstream']}, openai -> {rt.status()['openai_upstream']}")
    failing = [d["label"] for d in rt.status()["degraded"] if d["severity"] == "fail"]
    if failing:
        print(f"  DEGRADED: {', '.join(failing)} (`scalpel status` says why, `scalpel doctor` what to do)")
    paused = " (paused: pass-through)" if rt.setting("paused") else ""
    print(f"  Ctrl-C or `scalpel stop` stops it.{paused}", flush=True)


def _tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def _uptime(seconds: float) -> str:
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def saved_today(st: dict) -> str:
    """Today's realized saving from a status snapshot (the ledger's, since local midnight);
    "unknown" when the proxy could not read the ledger (never a 0 that is not one)."""
    from scalpel_desktop.cli.degraded import today_figure

    return today_figure(st)


def status_line(st: dict) -> str:
    state = st.get("state", "?")
    failing = [d for d in st.get("degraded") or [] if d.get("severity") == "fail"]
    return (
        f"{state} · up {_uptime(st.get('uptime_s') or 0)} · requests {st.get('requests', 0)}"
        f" · tokens in {_tokens(st.get('tokens_in', 0))} out {_tokens(st.get('tokens_out', 0))}"
        f" · errors {st.get('errors', 0)} · saved today {saved_today(st)}"
        + (f" · {len(failing)} degraded (scalpel status)" if failing else "")
    )


def _feature_words(st: dict) -> str:
    """``surgery on   tool filter off``: what acts on requests now, not only what the settings ask."""
    surgery = "on" if st.get("surgery_active", True) else "OFF"
    if st.get("tool_filter") and not st.get("tool_filter_active", True):
        tool_filter = "OFF (asked on)"
    else:
        tool_filter = "on" if st.get("tool_filter") else "off"
    return f"surgery {surgery}   tool filter {tool_filter}"


# -- controls --------------------------------------------------------------------


def _client():
    from scalpel_desktop.control_client import ControlClient

    return ControlClient.discover()


def _status(args: argparse.Namespace) -> int:
    from scalpel_desktop.control_client import ControlError, ProxyNotRunning

    try:
        st = _client().status()
    except ProxyNotRunning as e:
        if args.json:
            print(json.dumps({"running": False, "port": None, "pid": None, "requests": 0, "reason": str(e)}))
        else:
            print(str(e))
        return NOT_RUNNING_STATUS
    except ControlError as e:
        raise CliError(str(e)) from None
    st["running"] = True
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    from scalpel_desktop.cli.degraded import hanging, print_degraded
    from scalpel_desktop.textable import terminal_width

    today = st.get("requests_today")
    print(f"scalpel is running on http://127.0.0.1:{st.get('port')} (pid {st.get('pid')}), up {_uptime(st.get('uptime_s') or 0)}")
    print(f"  state     {st.get('state')}   tier {st.get('tier')}   policy {st.get('policy')}")
    print(f"  acting    {_feature_words(st)}   recording {'OFF' if st.get('recording') is False else 'on'}")
    print(f"  requests  {st.get('requests', 0)} since start ({'unknown' if today is None else f'{today:,}'} today), "
          f"errors {st.get('errors', 0)}")
    print(f"  tokens    in {_tokens(st.get('tokens_in', 0))}, out {_tokens(st.get('tokens_out', 0))}")
    print(f"  saved     {saved_today(st)} today (since local midnight)")
    width = terminal_width()
    if st.get("last_error"):
        for line in hanging("  last error: ", str(st["last_error"]), width):
            print(line)
    print_degraded(st.get("degraded") or [], width)
    return 0


AUTOPILOT_STOP_REFUSAL = (
    "autopilot is on: Claude Code's settings point at this proxy and its login service restarts it, "
    "so `stop` would strand Claude Code or be undone at once. `scalpel autopilot off` restores the settings first, "
    "then stops and removes the service; `scalpel pause` keeps it serving as pure pass-through."
)


def _stop(args: argparse.Namespace) -> int:
    from scalpel_desktop.control_client import ControlError, ProxyNotRunning, pid_alive
    from scalpel_desktop.service import autopilot

    if autopilot.is_on():
        raise CliError(AUTOPILOT_STOP_REFUSAL)
    try:
        client = _client()
        pid = client.pid
        client.stop()
    except ProxyNotRunning as e:
        print(str(e))
        return 0
    except ControlError as e:
        raise CliError(str(e)) from None
    deadline = time.monotonic() + args.timeout
    while pid and pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid and pid_alive(pid):
        # The runtime stopped serving; its process may be a tray that lives on.
        print(f"scalpel proxy stopped (pid {pid} is still running)")
    else:
        print(f"scalpel stopped (pid {pid})")
    return 0


def _pause(paused: bool) -> int:
    from scalpel_desktop.config import Config, ConfigError
    from scalpel_desktop.control_client import ControlError, ProxyNotRunning

    word = "paused: forwarding everything unchanged" if paused else "resumed: settings apply again"
    try:
        _client().pause() if paused else _client().resume()
        print(f"scalpel {word}")
        return 0
    except ProxyNotRunning:
        pass
    except ControlError as e:
        raise CliError(str(e)) from None
    try:
        cfg = Config.load()
        cfg.set("paused", paused)
        cfg.save()
    except ConfigError as e:
        raise CliError(str(e)) from None
    print(f"scalpel is not running; saved paused = {str(paused).lower()} (applies when it starts)")
    return 0
