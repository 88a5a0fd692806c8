"""``scalpel tier 1|2`` and ``scalpel policy cold|death|payback|off``.

Through the running proxy's control API when one runs (applied live, and the
proxy saves it), else straight into the config file. Either way the command
says what changed and where. ``pause``/``resume`` live in the proxy's commands.
"""

from __future__ import annotations

import argparse
import json

from scalpel_desktop.errors import CliError
from scalpel_desktop.cli.apply_setting import apply_setting

POLICY_HELP = {
    "cold": "cut only where the prompt cache makes it free",
    "death": "cold, and a result that just died on a warm cache when its saving repays the pinned rewrite "
             "(default)",
    "payback": "cold, and any dead result on a warm cache when the saving repays the pinned rewrite",
    "off": "never cut (earlier cuts are still replayed so the cache keeps matching)",
}


def register(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser(
        "tier",
        help="Choose what may be cut: 1 or 2.",
        description="Choose what may be cut. 1 = superseded reads, duplicate results, failed commands; "
        "2 = also dead page snapshots and stale large results (the default). Without a value, print it.",
    )
    t.add_argument("value", nargs="?", choices=["1", "2"], help="1 or 2")
    t.add_argument("--json", action="store_true", help="Machine-readable output.")
    t.set_defaults(func=lambda a: _setting("tier", a))
    p = sub.add_parser(
        "policy",
        help="Choose when to cut: " + ", ".join(POLICY_HELP) + ".",
        description="Choose when to cut. "
        + "; ".join(f"{k}: {v}" for k, v in POLICY_HELP.items())
        + ". Without a value, print it.",
    )
    p.add_argument("value", nargs="?", choices=list(POLICY_HELP), help="cold, death, payback or off")
    p.add_argument("--json", action="store_true", help="Machine-readable output.")
    p.set_defaults(func=lambda a: _setting("policy", a))


def _setting(key: str, args: argparse.Namespace) -> int:
    from scalpel_desktop.config import Config, ConfigError

    try:
        cfg = Config.load()
    except ConfigError as e:
        raise CliError(str(e)) from None
    before = cfg.get(key)
    if args.value is None:
        _print(args, {"key": key, "value": before, "changed": False, "where": str(cfg.path)},
               f"{key} = {json.dumps(before)}")
        return 0
    try:
        value = cfg.set(key, args.value)
    except ConfigError as e:
        raise CliError(str(e)) from None
    where, live = apply_setting(key, value, cfg)
    changed = before != value
    verb = "changed" if changed else "unchanged"
    text = f"{key}: {json.dumps(before)} -> {json.dumps(value)} ({verb}; {where})"
    _print(args, {"key": key, "before": before, "value": value, "changed": changed, "where": where,
                  "live": live}, text)
    return 0


def _print(args: argparse.Namespace, data: dict, text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data))
    else:
        print(text)
