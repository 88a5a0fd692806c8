"""``scalpel config show|path|set``.

``config show`` prints one line per setting with its help as a comment. Piped,
each line is whole (as every table of the CLI: ``textable``); on a terminal, a
help too long for the line wraps onto comment lines aligned under the first,
so no line is wider than the terminal."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from scalpel_desktop.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="Show or change settings.", description="Show or change settings (config.json).")
    csub = p.add_subparsers(dest="config_cmd", metavar="ACTION", required=True)
    show = csub.add_parser("show", help="Print every setting with its value.", description="Print every setting with its value.")
    show.add_argument("--json", action="store_true", help="Machine-readable output.")
    show.set_defaults(func=_show)
    path = csub.add_parser("path", help="Print the config file's path.", description="Print the config file's path.")
    path.set_defaults(func=_path)
    st = csub.add_parser("set", help="Set KEY to VALUE.", description="Set KEY to VALUE (validated; a list is comma-separated or a JSON list, '' or [] for none).")
    st.add_argument("key")
    st.add_argument("value")
    st.set_defaults(func=_set)


def _show(args: argparse.Namespace) -> int:
    from scalpel_desktop.config import KEYS, Config, ConfigError

    try:
        cfg = Config.load()
    except ConfigError as e:
        raise CliError(str(e)) from None
    values = cfg.as_dict()
    if args.json:
        print(json.dumps(values, indent=2))
        return 0
    from scalpel_desktop.textable import terminal_width

    columns = terminal_width(sys.stdout)
    width = max(len(k) for k in values)
    for k, v in values.items():
        print("\n".join(_setting_lines(f"{k:<{width}}  {json.dumps(v)}    ", KEYS[k].help, width, columns)))
    return 0


MIN_COMMENT = 24  # narrower than this, the comment starts on its own lines under the setting


def _setting_lines(head: str, help_text: str, width: int, columns: int | None) -> list[str]:
    """``head`` and ``# help``: one line, or (on a terminal of ``columns``) wrapped comment lines."""
    if columns is None or len(head) + 2 + len(help_text) <= columns:
        return [f"{head}# {help_text}"]
    comment = " " * (width + 2) + "# "
    lines = max(columns, len(comment) + MIN_COMMENT)  # (a terminal too narrow for a comment: wider lines)
    if columns - len(head) - 2 >= MIN_COMMENT:
        return textwrap.wrap(help_text, lines, initial_indent=f"{head}# ", subsequent_indent=comment,
                             break_on_hyphens=False)
    return [head.rstrip(), *textwrap.wrap(help_text, lines, initial_indent=comment, subsequent_indent=comment,
                                          break_on_hyphens=False)]


def _path(args: argparse.Namespace) -> int:
    from scalpel_desktop.paths import dirs

    print(dirs().config_file)
    return 0


def _set(args: argparse.Namespace) -> int:
    from scalpel_desktop.config import Config, ConfigError

    from scalpel_desktop.cli.apply_setting import apply_setting

    try:
        cfg = Config.load()
        value = cfg.set(args.key, args.value)
    except ConfigError as e:
        raise CliError(str(e)) from None
    where, _live = apply_setting(args.key, value, cfg)
    print(f"{args.key} = {json.dumps(value)}    ({where})")
    return 0
