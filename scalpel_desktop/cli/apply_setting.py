"""Change a setting the way every command does: through the running proxy when one
runs (it applies the value live and saves the file), else in the config file.

Writing the file first and then telling the proxy would lose the change
whenever that message fails: the proxy keeps its own copy of the settings and
rewrites the whole file on its next change.
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.errors import CliError


def apply_setting(key: str, value: Any, cfg: Any) -> tuple[str, bool]:
    """(where it went, whether it is live). ``cfg`` already holds the validated value."""
    from scalpel_desktop.control_client import ControlClient, ProxyNotRunning

    try:
        client = ControlClient.discover()
    except ProxyNotRunning:
        client = None
    except Exception:  # noqa: BLE001 - a stale runtime file or token: the file it is
        client = None
    if client is not None:
        try:
            client.set_settings({key: value})
        except Exception as e:  # noqa: BLE001
            raise CliError(f"the running proxy refused {key}={value!r}: {e}") from None
        port = getattr(client, "port", None)
        return f"applied live by the running proxy{f' on port {port}' if port else ''} and saved", True
    try:
        cfg.save()
    except OSError as e:
        raise CliError(f"cannot write {cfg.path}: {e}") from None
    return f"saved to {cfg.path}; no proxy running", False
