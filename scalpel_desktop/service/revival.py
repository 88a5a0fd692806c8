"""Start autopilot's proxy again when it is down, once, however many hooks notice at the same time.

Why: with autopilot on, Claude Code's settings send every session to scalpel's
port; a proxy that dies (a crash, ``kill -9``, the OOM killer) leaves each
running session retrying for minutes before "Connection refused". A service
manager restarts it on its own (systemd ``Restart=always``, launchd
``KeepAlive``), but with ``autopilot on --session-hook`` there is none, and on
Windows the logon task repeats only every minute. So the hooks Claude Code
runs before a prompt's first request (SessionStart, UserPromptSubmit) and the
statusline command call ``revive`` when nothing answers on the port: it asks
the login service to start (``backend.start()``: ``systemctl --user start``,
or for ``--session-hook`` a detached ``scalpel start``), and waits until the
proxy answers (the hooks) or returns at once (the statusline, which must not
hold up Claude Code's screen).

The statusline runs several times a second while Claude Code redraws, and
hooks of several sessions can fire together: a claim file
(``dirs().state/revival.claim``, created exclusively) lets one of them start
the service while the others only wait; a claim older than ``CLAIM_S`` is
taken over (its owner died or its start failed). A revival that ends with
the proxy answering gives the claim up. A second proxy started anyway would
only find the runtime lock held and exit: the claim saves the spawn, not
correctness.

Stdlib only (the hooks import it), and reached only when the port refused a
connect: the normal path never imports it.
"""

from __future__ import annotations

import os
import time

#: A claim younger than this means a start is under way (a proxy answers within about 2 s).
CLAIM_S = 10.0
POLL_S = 0.1


def _claim_path():
    from scalpel_desktop.paths import dirs

    return dirs().state / "revival.claim"


def claim(now: float | None = None) -> bool:
    """True when this process may start the service: no claim, or only a stale one."""
    path = _claim_path()
    now = time.time() if now is None else now
    try:
        if now - path.stat().st_mtime < CLAIM_S:
            return False
        path.unlink()  # stale: its owner died or gave up
    except FileNotFoundError:
        pass
    except OSError:
        return True  # no state dir to coordinate through: better two starts than none
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False  # another hook claimed it between our unlink and our create
    except OSError:
        return True
    return True


def release() -> None:
    try:
        _claim_path().unlink()
    except OSError:
        pass


def revive(backend, port: int, wait_s: float) -> str:
    """Start ``backend``'s service unless another process just did, then wait up to ``wait_s``.

    Returns ``started`` (the proxy answers), ``starting`` (``wait_s`` is 0: asked, not waited
    for), or ``failed: <why>``."""
    from scalpel_desktop.service.probe import health

    deadline = time.monotonic() + wait_s
    asked = False
    while True:
        if health(port, timeout=0.5) is not None:
            release()
            return "started"
        if not asked and claim():
            outcome = backend.start()
            if not outcome.ok:
                release()
                return f"failed: {outcome.message or 'the service manager gave no reason'}"
            asked = True
        if wait_s <= 0:
            return "starting"
        if asked and not backend.still_starting():
            release()
            return f"failed: the {backend.name} service started a proxy that exited at once"
        if time.monotonic() >= deadline:
            return f"failed: the {backend.name} service did not answer within {wait_s:g} s"
        time.sleep(POLL_S)
