"""``scalpel tools ls|suggest|remove|restore|on|off|history``: the tool inventory and filter."""

from __future__ import annotations

import argparse
import json
import time

from scalpel_desktop.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tools", help="Tool inventory, removal suggestions and the opt-in tool filter.",
        description="See which tools your sessions declare and call, get evidence-based removal suggestions, "
                    "and remove declarations you never use (opt-in, per name, pinned per session).")
    ts = p.add_subparsers(dest="tools_cmd", metavar="ACTION", required=True)

    ls = ts.add_parser("ls", help="Declared tools, calls, sizes, removal list and realized savings.",
                       description="List every declared tool seen (kind, size, sessions, calls), the removal list "
                                   "and the savings the filter really realized.")
    ls.add_argument("--json", action="store_true", help="Machine-readable output.")
    ls.set_defaults(func=_ls)

    sg = ts.add_parser("suggest", help="Declarations never called in >= 5 sessions over >= 7 days.",
                       description="Suggest removals: declared in at least 5 captured sessions spanning at least "
                                   "7 days and called in none. Savings shown are projections.")
    sg.add_argument("--json", action="store_true", help="Machine-readable output.")
    sg.set_defaults(func=_suggest)

    rm = ts.add_parser("remove", help="Add NAME to the removal list (new sessions).",
                       description="Add NAME to the removal list: a tool name, mcp__<server> (a whole MCP server) "
                                   "or skill__<name> (a skill listing entry). Applies to sessions that start "
                                   "afterwards while the filter is on.")
    rm.add_argument("name", metavar="NAME")
    rm.add_argument("--force", action="store_true",
                    help="Required to remove a Claude Code built-in, or a name no captured session has declared.")
    rm.add_argument("--now", action="store_true",
                    help="Also re-pin sessions already running (each re-writes its whole prompt cache once).")
    rm.set_defaults(func=_remove)

    rs = ts.add_parser("restore", help="Take NAME off the removal list.",
                       description="Take NAME off the removal list (new sessions declare it again).")
    rs.add_argument("name", metavar="NAME")
    rs.add_argument("--now", action="store_true",
                    help="Also re-pin sessions already running (each re-writes its whole prompt cache once).")
    rs.set_defaults(func=_restore)

    on = ts.add_parser("on", help="Turn the tool filter on for new sessions.",
                       description="Turn the tool filter on (setting tool_filter): sessions that start afterwards "
                                   "pin the removal list.")
    on.set_defaults(func=lambda a: _toggle(a, True))
    off = ts.add_parser("off", help="Turn the tool filter off for new sessions.",
                        description="Turn the tool filter off: sessions that start afterwards send every tool. "
                                    "Running sessions keep their pinned set.")
    off.set_defaults(func=lambda a: _toggle(a, False))

    hi = ts.add_parser("history", help="Every change to the removal list: when and from where.",
                       description="Every change to the removal list and the filter switch, with its time and "
                                   "source (cli, tray, dashboard, control_api).")
    hi.add_argument("--json", action="store_true", help="Machine-readable output.")
    hi.set_defaults(func=_history)


def _store():
    from scalpel_desktop.tools.store import ToolStore

    try:
        return ToolStore.open()
    except Exception as e:  # noqa: BLE001
        raise CliError(f"cannot open the ledger database: {e}") from None


def _config():
    from scalpel_desktop.config import Config, ConfigError

    try:
        return Config.load()
    except ConfigError as e:
        raise CliError(str(e)) from None


def _when(ts: float | None) -> str:
    return "-" if not ts else time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _ls(args: argparse.Namespace) -> int:
    from scalpel_desktop.tools.listing import inventory_listing

    store = _store()
    data = inventory_listing(store, _config())
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"tool filter: {'on' if data['tool_filter'] else 'off'} (for new sessions)")
    from scalpel_desktop.textable import say

    if data["removals"]:
        print("removal list: " + ", ".join(
            r["name"] + (" (forced)" if r["forced"] else "") for r in data["removals"]))
    else:
        print("removal list: empty")
    print(f"sessions with a captured inventory: {data['sessions']}")
    rows = data["tools"]
    if rows:
        from scalpel_desktop.textable import Col, print_table

        print()
        print_table([Col("name"), Col("kind", drop=2), Col("tokens", right=True), Col("sess", right=True, drop=1),
                     Col("calls", right=True), Col("last seen", drop=3), Col("status", wrap=True)],
                    [[r["name"], r["kind"], f"{r['tokens']:,}", f"{r['sessions']:,}", f"{r['calls']:,}",
                      _when(r["last_seen"]), r["status"] or ""] for r in rows])
    else:
        print("no declarations captured yet (run sessions through the proxy)")
    real = data["realized"]
    usd = "unknown" if real["usd"] is None else f"${real['usd']:.4f}"
    print()
    say(f"realized by the filter: {real['tokens']:,} tokens not sent in {real['requests']:,} request(s), {usd} "
        "(measured on requests the filter changed, priced at the tier each was billed at)")
    return 0


def _suggest(args: argparse.Namespace) -> int:
    from scalpel_desktop.tools.suggest import build_report

    from scalpel_desktop.textable import say

    report = build_report(_store())
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    cov = report["coverage"]
    th = report["thresholds"]
    say(f"coverage: {cov['sessions']} session(s) with a captured inventory over {cov['days']} day(s) "
        f"(a suggestion needs >= {th['min_sessions']} sessions spanning >= {th['min_days']:g} days, no call)")
    if not report["suggestions"]:
        say("no suggestions yet")
    for s in report["suggestions"]:
        p = s["projected"]
        usd = "" if p["usd_per_session"] is None else f", ~${p['usd_per_session']:.4f}/session ({p['priced_as']})"
        print()
        say(f"{s['name']}  ({s['kind']}, ~{s['tokens']:,} tokens per request)", indent=2)
        say(s["basis"], indent=4)
        say(f"projected saving: ~{p['tokens_per_session']:,} tokens per session "
            f"(~{p['mean_requests_per_session']} requests each){usd}  [projected]", indent=4)
        say(s["command"], indent=4)
    w = report["withheld"]
    print()
    say(f"withheld for lack of evidence: {w['count']} never-called declaration(s)")
    for item in w["items"][:20]:
        say(f"{item['name']}: {item['reason']}", indent=2)
    if w["count"] > 20:
        say(f"  ... and {w['count'] - 20} more (--json lists all)")
    return 0


def _remove(args: argparse.Namespace) -> int:
    from scalpel_desktop.tools.removals import NeedsForce, NeverSeen, RemovalError, remove

    store = _store()
    try:
        res = remove(store, args.name, source="cli", force=args.force, now=args.now, require_seen=True)
    except (NeedsForce, NeverSeen) as e:
        raise CliError(f"refusing: {e}") from None
    except RemovalError as e:
        raise CliError(str(e)) from None
    if res["builtin"]:
        print(f"warning: {res['name']} is a Claude Code built-in; the model loses {res['loses']}")
    print(f"{res['name']}: {'added to' if res['changed'] else 'already on'} the removal list")
    _after_change(args, res)
    return 0


def _restore(args: argparse.Namespace) -> int:
    from scalpel_desktop.tools.removals import restore

    res = restore(_store(), args.name, source="cli", now=args.now)
    print(f"{res['name']}: " + ("taken off the removal list" if res["changed"] else res["note"]))
    _after_change(args, res)
    return 0


def _after_change(args: argparse.Namespace, res: dict) -> None:
    cfg = _config()
    if args.now:
        print(f"re-pinned {res.get('repinned', 0)} session(s): each re-writes its whole prompt cache on its next request")
        _notify_proxy("tools", {"op": "forget_pins", "source": "control_api"})
    else:
        print("applies to sessions that start from now on" +
              ("" if cfg.get("tool_filter") else " once the filter is on (scalpel tools on)"))


def _toggle(args: argparse.Namespace, on: bool) -> int:
    from scalpel_desktop.config import ConfigError
    from scalpel_desktop.tools.removals import set_enabled

    try:
        res = set_enabled(_store(), _config(), on, source="cli")
    except ConfigError as e:
        raise CliError(str(e)) from None
    _notify_proxy(None, {"tool_filter": on})
    state = "on" if on else "off"
    print(f"tool filter {state} for new sessions" + ("" if res["changed"] else " (it already was)") +
          "; running sessions keep their pinned set")
    return 0


def _history(args: argparse.Namespace) -> int:
    rows = _store().history()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no changes recorded")
    for r in rows:
        print(f"{_when(r['ts'])}  {r['action']:<8} {r['name'] or '-':<30} {r['source']:<12} {r['detail']}".rstrip())
    return 0


def _notify_proxy(action: str | None, payload: dict) -> None:
    """Tell a running proxy (best effort; silent when none runs)."""
    try:
        from scalpel_desktop.control_client import ControlClient  # type: ignore[attr-defined]

        client = ControlClient.discover()
        if action is None:
            client.set_settings(payload)
        else:
            client.action(action, payload)
    except Exception:  # noqa: BLE001
        pass
