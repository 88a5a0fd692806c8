"""Install, remove and report scalpel's entries in Claude Code's settings.json.

Hooks (``hooks.PreToolUse`` / ``PostToolUse`` / ``SessionStart`` /
``UserPromptSubmit`` / ``Notification`` / ``SessionEnd``) and the ``statusLine`` setting. Same safety rules as
autopilot (``settings_file``): atomic, backed up, refused on a file that does
not parse, undone exactly.

The commands run ``<this python> -I -m scalpel_desktop.hooks_entry EVENT``
(``-I``: the project directory Claude Code runs hooks in can never shadow
scalpel's modules), or ``<app> hook EVENT`` for a frozen standalone build.
Scalpel's entries are recognised by the ``scalpel_desktop.hooks_entry``
marker in their command (or ``<scalpel app> hook EVENT``), so uninstall
removes exactly them.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import asdict, dataclass

from scalpel_desktop.service.settings_file import ClaudeSettings, get_path, object_at

HOOKS_FEATURE = "hooks"
STATUSLINE_FEATURE = "statusline"
MARKER = "scalpel_desktop.hooks_entry"

#: event -> (matcher or None, hooks_entry argument)
HOOK_EVENTS = {
    "PreToolUse": ("Read", "pre-tool-use"),
    "PostToolUse": ("Read|Edit|Write|MultiEdit|NotebookEdit", "post-tool-use"),
    "SessionStart": (None, "session-start"),
    "UserPromptSubmit": (None, "user-prompt-submit"),
    "Notification": (None, "notification"),  # the cache keeper: Claude Code waits for the person
    "SessionEnd": (None, "session-end"),  # ... and no more: its keep-alive pings stop
}


def _quote(argv: list[str]) -> str:
    if sys.platform == "win32":
        return subprocess.list2cmdline(argv)
    return " ".join(shlex.quote(a) for a in argv)


def command_for(event_arg: str) -> str:
    if getattr(sys, "frozen", False):
        return _quote([sys.executable, "hook", event_arg])
    return _quote([sys.executable, "-I", "-m", MARKER, event_arg])


_FROZEN_TAILS = tuple(f" hook {arg}" for _, arg in HOOK_EVENTS.values()) + (" statusline",)


def _is_ours(hook: object) -> bool:
    """Scalpel's entries: the module marker, or a standalone build's ``<scalpel exe> hook EVENT``."""
    if not isinstance(hook, dict):
        return False
    command = str(hook.get("command", ""))
    if MARKER in command:
        return True
    return "scalpel" in command.lower() and command.rstrip().endswith(_FROZEN_TAILS)


def _strip_ours(doc: dict) -> None:
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event in list(hooks):
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                inner = [h for h in group["hooks"] if not _is_ours(h)]
                if not inner and group["hooks"]:
                    continue
                if len(inner) != len(group["hooks"]):
                    group = {**group, "hooks": inner}
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            hooks.pop(event)
    if not hooks:
        doc.pop("hooks", None)


#: SessionStart and UserPromptSubmit may wait for a dead proxy to come back (service/session_guard.py).
SESSION_START_TIMEOUT_S = 30
REVIVING_EVENTS = ("SessionStart", "UserPromptSubmit")


def install_hooks(settings: ClaudeSettings | None = None) -> dict:
    settings = settings or ClaudeSettings()

    def edit(doc: dict) -> dict:
        _strip_ours(doc)
        replaced: dict = {}
        hooks = object_at(doc, "hooks", replaced)
        for event, (matcher, arg) in HOOK_EVENTS.items():
            group: dict = {}
            if matcher:
                group["matcher"] = matcher
            timeout = SESSION_START_TIMEOUT_S if event in REVIVING_EVENTS else 10
            group["hooks"] = [{"type": "command", "command": command_for(arg), "timeout": timeout}]
            existing = hooks.get(event)
            hooks[event] = (existing if isinstance(existing, list) else []) + [group]
        return replaced

    return settings.apply(HOOKS_FEATURE, edit)


def uninstall_hooks(settings: ClaudeSettings | None = None) -> bool:
    settings = settings or ClaudeSettings()
    return settings.restore(HOOKS_FEATURE, _strip_ours)


def statusline_command() -> str:
    if getattr(sys, "frozen", False):
        return _quote([sys.executable, "statusline"])
    return _quote([sys.executable, "-I", "-m", MARKER, "statusline"])


#: Claude Code (2.1.97 and later) re-runs the statusLine command this often (seconds) on top of its own
#: updates, which stop while a session idles or retries: so the line tells a dead proxy, and (autopilot on)
#: starts it again, within this time, not at the next message. One interpreter start per interval.
STATUSLINE_REFRESH_S = 10


def install_statusline(settings: ClaudeSettings | None = None) -> dict:
    settings = settings or ClaudeSettings()

    def edit(doc: dict) -> dict:
        prev = doc.get("statusLine", ClaudeSettings.MISSING)  # the first recorded value wins
        doc["statusLine"] = {"type": "command", "command": statusline_command(), "padding": 0,
                             "refreshInterval": STATUSLINE_REFRESH_S}
        return {("statusLine",): prev}

    return settings.apply(STATUSLINE_FEATURE, edit)


def uninstall_statusline(settings: ClaudeSettings | None = None) -> bool:
    settings = settings or ClaudeSettings()

    def drop_ours(doc: dict) -> None:
        if _is_ours(doc.get("statusLine")):
            doc.pop("statusLine", None)

    return settings.restore(STATUSLINE_FEATURE, drop_ours)


@dataclass
class HooksStatus:
    settings_file: str
    installed: dict[str, bool]
    statusline: bool
    foreign_statusline: bool
    problem: str | None = None

    @property
    def all_installed(self) -> bool:
        return all(self.installed.values())

    def as_dict(self) -> dict:
        return {**asdict(self), "all_installed": self.all_installed}


def status(settings: ClaudeSettings | None = None) -> HooksStatus:
    from scalpel_desktop.paths import home_relative

    settings = settings or ClaudeSettings()
    try:
        doc = settings.load()
        problem = None
    except Exception as e:  # noqa: BLE001
        doc, problem = {}, str(e)
    installed = {}
    for event in HOOK_EVENTS:
        groups = get_path(doc, ("hooks", event)) or []
        installed[event] = any(
            _is_ours(h)
            for g in groups if isinstance(g, dict)
            for h in (g.get("hooks") or []) if isinstance(g.get("hooks"), list)
        )
    sl = doc.get("statusLine")
    return HooksStatus(
        settings_file=home_relative(settings.path),
        installed=installed,
        statusline=_is_ours(sl),
        foreign_statusline=sl is not None and not _is_ours(sl),
        problem=problem,
    )
