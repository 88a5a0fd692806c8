"""``scalpel spill ls|show|gc``: the files holding every removed tool output."""

from __future__ import annotations

import argparse
import json
import sys
import time

from scalpel_desktop.errors import CliError

DESCRIPTION = (
    "Every tool output scalpel cut from a request is kept in a spill file named by the sha256 of its "
    "content (mode 0600 in a 0700 directory). The stub that replaced it names that file."
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("spill", help="List, show or clean up the spilled originals of cut tool output.", description=DESCRIPTION)
    ssub = p.add_subparsers(dest="spill_cmd", metavar="ACTION", required=True)
    ls = ssub.add_parser("ls", help="List spill files, newest first.", description="List spill files (hash, size, age), newest first.")
    ls.add_argument("--json", action="store_true", help="Machine-readable output.")
    ls.set_defaults(func=_ls)
    show = ssub.add_parser("show", help="Print the original content stored under HASH.",
                           description="Print the original content stored under HASH (the full hash or a unique prefix of >= 4 hex digits).")
    show.add_argument("hash", metavar="HASH")
    show.add_argument("--raw", action="store_true", help="Print the stored bytes exactly (the content's compact JSON).")
    show.set_defaults(func=_show)
    gc = ssub.add_parser("gc", help="Remove old spill files and enforce the size cap.",
                         description="Remove spill files older than DAYS, then the oldest ones until the total is under the cap. "
                                     "Defaults: the spill_keep_days and spill_max_mb settings. A spill file the stubs of a "
                                     "live conversation point at (one seen within its cache TTL plus spill_keep_live_hours, "
                                     "24 by default) is kept whatever the limits say, and gc says how many it kept.")
    gc.add_argument("--older-than", type=float, metavar="DAYS", help="Age limit in days (default: spill_keep_days).")
    gc.add_argument("--max-mb", type=float, metavar="N", help="Size cap in MB (default: spill_max_mb).")
    gc.add_argument("--force", action="store_true",
                    help="Apply the limits to live conversations' spill files too: their stubs then point nowhere.")
    gc.add_argument("--json", action="store_true", help="Machine-readable output.")
    gc.set_defaults(func=_gc)


def _store():
    from scalpel_desktop.store.spill import SpillStore

    return SpillStore()


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.2f} MB"


def _age(mtime: float) -> str:
    s = max(0.0, time.time() - mtime)
    if s < 3600:
        return f"{int(s // 60)}m"
    if s < 86400:
        return f"{int(s // 3600)}h"
    return f"{int(s // 86400)}d"


def _ls(args: argparse.Namespace) -> int:
    from scalpel_desktop.paths import home_relative

    store = _store()
    entries = store.ls()
    if args.json:
        print(json.dumps([{"sha256": e.sha, "bytes": e.size, "mtime": e.mtime, "path": home_relative(e.path)} for e in entries], indent=2))
        return 0
    if not entries:
        print(f"No spill files in {home_relative(store.dir)}.")
        return 0
    from scalpel_desktop.textable import Col, print_table, say, unique_prefixes

    short = unique_prefixes([e.sha for e in entries], [e.sha for e in entries], min_len=10)
    print_table([Col("hash"), Col("bytes", right=True), Col("age", right=True), Col("path", drop=1, wrap=True)],
                [[short[e.sha], f"{e.size:,}", _age(e.mtime), home_relative(e.path)] for e in entries])
    say(f"{len(entries)} files, {_mb(sum(e.size for e in entries))} in {home_relative(store.dir)}; "
        "print one with: scalpel spill show HASH (a unique prefix works)")
    return 0


def render_content(data: bytes) -> str:
    """The stored content as a person reads it: the text, images named but not dumped."""
    try:
        content = json.loads(data)
    except ValueError:
        return data.decode("utf-8", errors="replace")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict) and isinstance(b.get("text"), str):
                parts.append(b["text"])
            elif isinstance(b, dict):
                src = b.get("source") if isinstance(b.get("source"), dict) else {}
                parts.append(f"[{b.get('type', 'block')}{' ' + str(src.get('media_type')) if src.get('media_type') else ''}]")
            else:
                parts.append(json.dumps(b, ensure_ascii=False))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False, indent=2)


def _show(args: argparse.Namespace) -> int:
    store = _store()
    try:
        sha = store.resolve(args.hash)
        data = store.get(sha)
    except KeyError as e:
        raise CliError(str(e.args[0]) if e.args else "no such spill file") from None
    except FileNotFoundError:
        raise CliError(f"no spill file {args.hash!r} (removed by gc?)") from None
    if args.raw:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    text = render_content(data)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _gc(args: argparse.Namespace) -> int:
    from scalpel_desktop.config import Config, ConfigError

    try:
        cfg = Config.load()
    except ConfigError as e:
        raise CliError(str(e)) from None
    days = args.older_than if args.older_than is not None else cfg["spill_keep_days"]
    cap = args.max_mb if args.max_mb is not None else cfg["spill_max_mb"]
    if days < 0 or cap < 0:
        raise CliError("--older-than and --max-mb must not be negative")
    live = _live(cfg["spill_keep_live_hours"], args.force)
    r = _store().gc(older_than_days=days, max_mb=cap, live=live.hashes, force=args.force)
    hours = live.window_s / 3600
    if args.force and r.removed_live:
        print(f"warning: --force removed {r.removed_live} spill files that the stubs of live conversations point at: "
              "those stubs now point nowhere (the model is told the original is in a file that is gone)",
              file=sys.stderr)
    if args.json:
        print(json.dumps({"removed": r.removed, "freed_bytes": r.freed_bytes, "kept": r.kept, "kept_bytes": r.kept_bytes,
                          "kept_live": r.kept_live, "kept_live_bytes": r.kept_live_bytes,
                          "live_sessions": live.sessions, "live_window_hours": hours,
                          "forced": bool(args.force), "removed_live": r.removed_live,
                          "over_cap_bytes": r.over_cap_bytes, "older_than_days": days, "max_mb": cap}))
        return 0
    from scalpel_desktop.textable import say

    say(f"Removed {r.removed} spill files ({_mb(r.freed_bytes)}); kept {r.kept} ({_mb(r.kept_bytes)}). "
        f"Limits: older than {days:g} days, cap {cap:g} MB.")
    if r.kept_live:
        say(f"Kept {r.kept_live} of them ({_mb(r.kept_live_bytes)}) whatever the limits: the stubs of "
            f"{live.sessions} conversation(s) seen in the last {hours:g} h (the cache TTL plus "
            f"spill_keep_live_hours = {cfg['spill_keep_live_hours']}) point at them. --force removes them too.")
    if r.over_cap_bytes:
        say(f"The spill dir stays {_mb(r.over_cap_bytes)} over the cap: what is left over it is what live "
            "conversations point at.")
    return 0


def _live(keep_live_hours: int, force: bool):
    """What live conversations point at (``store/spill_refs.py``), from the ledger. No ledger yet: no
    cut, nothing live. A ledger that cannot be read: gc cannot tell, so it refuses unless forced."""
    import sqlite3

    from scalpel_desktop import clock
    from scalpel_desktop.paths import dirs, home_relative
    from scalpel_desktop.store.ledger_queries import open_readonly
    from scalpel_desktop.store.spill_refs import LiveSpills, live_spills, live_window_s

    now = clock.now()  # the ledger's times are the proxy's clock (which the test clock moves)
    try:
        conn = open_readonly()
        if conn is None:
            return LiveSpills(frozenset(), 0, now, live_window_s(keep_live_hours))
        try:
            return live_spills(conn, now, keep_live_hours)
        finally:
            conn.close()
    except sqlite3.Error as e:
        if force:
            return LiveSpills(frozenset(), 0, now, live_window_s(keep_live_hours))
        raise CliError(f"cannot read the surgery log in {home_relative(dirs().database)} ({e}), so gc cannot tell "
                       "which spill files live conversations point at and removes nothing; "
                       "--force applies the limits to every file") from None
