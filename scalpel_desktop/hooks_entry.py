"""Claude Code hook and statusline commands: ``python -I -m scalpel_desktop.hooks_entry EVENT``.

Import-light on purpose: Claude Code runs these on every tool call, so this
module imports only the standard library at the top (no aiohttp, textual,
orjson, not even the CLI parser) and answers in a few tens of ms. Every event
exits 0 and prints nothing on any error: a hook must never break a session.
The one output besides PreToolUse's decision: SessionStart's and
UserPromptSubmit's ``{"systemMessage": ...}`` when Claude Code's base URL
answers nowhere and cannot be brought back (a dead autopilot proxy is started
again first: ``service/session_guard.py``).

Events (argument): ``pre-tool-use``, ``post-tool-use``, ``session-start``,
``user-prompt-submit``, ``notification``, ``session-end``, ``statusline``. The decisions live in
``service/hook_logic.py`` (reads), ``service/session_guard.py`` (a base URL
that answers) and ``service/statusline.py`` (the line); all are imported
lazily here.
"""

from __future__ import annotations

import json
import sys


def _read_stdin() -> dict:
    raw = sys.stdin.buffer.read()
    doc = json.loads(raw) if raw.strip() else {}
    return doc if isinstance(doc, dict) else {}


def run(event: str, payload: dict) -> str | None:
    """The text to print for ``event`` (None: print nothing)."""
    if event == "statusline":
        from scalpel_desktop.service.statusline import render

        return render(payload)
    if event == "user-prompt-submit":  # before each prompt's first request: is the proxy there?
        from scalpel_desktop.service import session_guard

        message = session_guard.check()
        return json.dumps({"systemMessage": message}) if message else None
    from scalpel_desktop.service import hook_logic

    if event == "pre-tool-use":
        out = hook_logic.pre_tool_use(payload)
        return json.dumps(out) if out else None
    if event == "post-tool-use":
        hook_logic.post_tool_use(payload)
        return None
    if event in ("notification", "session-end"):  # the cache keeper: Claude Code waits, or the session ended
        hook_logic.keeper_event(payload, "waiting" if event == "notification" else "end")
        return None
    if event == "session-start":
        message = hook_logic.session_start(payload)  # Claude Code shows systemMessage in the session
        return json.dumps({"systemMessage": message}) if message else None
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        event = args[0] if args else ""
        text = run(event, _read_stdin())
        if text:
            sys.stdout.write(text + ("\n" if not text.endswith("\n") else ""))
            sys.stdout.flush()
    except BaseException:  # noqa: BLE001 - silent by contract (exit 0, no output)
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
