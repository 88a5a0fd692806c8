"""The errors a user may see, in one hierarchy (httpx's ``_exceptions.py`` is the model).

Each carries a short ``title`` and a ``message`` that says what is wrong and
what to do (maestral's habit); ``str(error)`` is the message. The core raises
them; the frontends render them: the CLI as ``title: message`` in one place
(``cli/__init__.py`` ``main``), the tray in a notification, the control API as
``{"ok": false, "error": message}`` with the action's HTTP status.

Each also keeps the builtin base it always had (``ValueError``,
``RuntimeError``, ...), so existing ``except ValueError`` handlers still see it.

    ScalpelError
    ├── SettingError (ValueError)           config.ConfigError: a bad setting key or value
    ├── ActionError                         a control action refused (``status``: its HTTP status)
    ├── ProxyError (RuntimeError)
    │   ├── AlreadyRunning                  runtime.AlreadyRunning: a second start
    │   └── ControlError                    control_client: the control API did not answer as asked
    │       └── ProxyNotRunning             no proxy to talk to
    ├── DataError (ValueError)
    │   ├── PriceTableError                 accounting.prices: a bad price file
    │   └── RemovalError                    tools.removals: a bad tool removal request
    └── CommandError                        a command's own refusal (``status``: exit code)
        └── CliError                        what the CLI raises; printed as ``scalpel: <message>``

Subclasses that live beside the code that raises them (``ConfigError``,
``AlreadyRunning``, ``ControlError``, ``PriceTableError``, ``RemovalError``,
``CliError``) derive from the classes here. Nothing here imports anything of
the project: any module may raise these.
"""

from __future__ import annotations


class ScalpelError(Exception):
    """Base of every user-facing error: a ``title`` and a ``message``."""

    title = "Error"

    def __init__(self, message: str, *, title: str | None = None):
        super().__init__(message)
        self.message = message
        if title is not None:
            self.title = title

    def render(self) -> str:
        """The one-line form a terminal shows: ``title: message``."""
        return f"{self.title}: {self.message}"


class SettingError(ScalpelError, ValueError):
    """A bad setting key or value; the message names the key, the value and what is allowed."""

    title = "Invalid setting"


class ActionError(ScalpelError):
    """A refused control action: ``status`` is the HTTP status to answer with."""

    title = "Action refused"

    def __init__(self, message: str, status: int = 400, *, title: str | None = None):
        super().__init__(message, title=title)
        self.status = status


class ProxyError(ScalpelError, RuntimeError):
    """The proxy process: could not start, or could not be reached."""

    title = "Proxy"


class DataError(ScalpelError, ValueError):
    """A file or request whose content cannot be used (the message names what is wrong)."""

    title = "Bad data"


class CommandError(ScalpelError):
    """A command's own refusal; ``status`` is the exit code."""

    title = "scalpel"

    def __init__(self, message: str, status: int = 1, *, title: str | None = None):
        super().__init__(message, title=title)
        self.status = status


class CliError(CommandError):
    """A command's refusal: printed as ``scalpel: <message>``, exit status 1 (or ``status``)."""
