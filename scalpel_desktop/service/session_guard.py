"""Before a session's requests, make sure Claude Code's base URL answers: bring a dead proxy back, or say so.

The SessionStart hook runs before Claude Code's first request, the
UserPromptSubmit hook before each prompt's first request, both with Claude
Code's own environment (settings.json's ``env`` applied), so
``ANTHROPIC_BASE_URL`` here is the URL this session will use. The normal path
is one connect to that port. When it is refused and the port is scalpel's:

- autopilot on and its login service installed: start the service and wait
  (bounded by ``WAIT_S``, inside the hooks' 30 s timeout) until it answers
  (``service/revival.py``: one start however many hooks ask at once);
- otherwise, or when it does not come back: return a one-paragraph message
  that ``hooks_entry`` prints as the hook's ``systemMessage``, which Claude
  Code shows in the session ("SessionStart:startup says: ...") with the way
  out: `scalpel autopilot off` restores the settings, `scalpel doctor` tells
  what is wrong.

Any other loopback base URL where nothing listens gets the same warning (the
session would hang on retries with no word). The statusline asks
``start_proxy_if_needed(port, wait_s=0)``: it starts, never waits. Stdlib
only, imported lazily by the hooks and the statusline.
"""

from __future__ import annotations

import json
import os

WAIT_S = 20.0
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _autopilot_state() -> dict:
    from scalpel_desktop.paths import dirs

    try:
        state = json.loads((dirs().state / "autopilot.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _loopback_port(url: str) -> int | None:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return port if host in LOOPBACK else None


def listening(port: int, timeout: float = 0.5) -> bool:
    """One connect to 127.0.0.1:port: the whole cost of the normal path."""
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def routed_port(env) -> tuple[int | None, int | None]:
    """(the loopback port this session's requests go to, autopilot's port when autopilot is on)."""
    state = _autopilot_state()
    url = env.get("ANTHROPIC_BASE_URL") or ""
    autopilot_port = int(state.get("port") or 4242) if state.get("enabled") else None
    return (_loopback_port(url) if url else autopilot_port), autopilot_port


def start_proxy_if_needed(port: int | None = None, wait_s: float = WAIT_S) -> str:
    """With autopilot on and nothing answering: start the login service and wait for health.

    Returns what happened: ``autopilot off``, ``running``, ``service not installed``,
    ``started``, ``starting`` (``wait_s`` 0: asked, not waited for), or ``failed: <why>``."""
    state = _autopilot_state()
    if not state.get("enabled"):
        return "autopilot off"
    from scalpel_desktop.service.probe import health

    port = port or int(state.get("port") or 4242)
    if health(port, timeout=0.5) is not None:
        return "running"
    from scalpel_desktop.service.autostart import choose_backend
    from scalpel_desktop.service.revival import revive

    backend = choose_backend()
    if not backend.enabled():
        return "service not installed"
    return revive(backend, port, wait_s)


def check(env=None, wait_s: float = WAIT_S) -> str | None:  # env: any mapping (os.environ)
    """The message to show in the session, or None when the base URL answers (or is not local)."""
    env = os.environ if env is None else env
    port, autopilot_port = routed_port(env)
    if port is None or listening(port):
        return None  # the normal path: one connect (a gateway listening there is not ours to judge)
    from scalpel_desktop.service.probe import base_url

    if port == autopilot_port:
        result = start_proxy_if_needed(port, wait_s)
        if result in ("running", "started"):
            return None
        return (
            f"scalpel: nothing answers at {base_url(port)}, where Claude Code's settings send this session, and "
            f"autopilot's login service could not bring the proxy back ({result.removeprefix('failed: ')}). "
            "Requests from this session will fail. Run `scalpel autopilot off` to restore Claude Code's settings, "
            "then restart Claude Code; `scalpel doctor` says what is wrong."
        )
    where = env.get("ANTHROPIC_BASE_URL") or base_url(port)
    return (
        f"scalpel: nothing answers at {where} (ANTHROPIC_BASE_URL), so requests from this session will fail. "
        "Start the proxy (`scalpel start`, or `scalpel tray`), or unset ANTHROPIC_BASE_URL (shell or "
        "settings.json env), then restart Claude Code; `scalpel doctor` says what is wrong."
    )
