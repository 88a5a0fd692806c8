"""tui/notice.py: the dashboard's one notice of what is off or failing, in place of a toast per refresh."""

from __future__ import annotations

import pytest

from scalpel_desktop.config import Config
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime
from scalpel_desktop.tui.app import make_app
from scalpel_desktop.tui.notice import notice, today_words
from scalpel_desktop.tui.proxy import ProxyState
from tests.tui.helpers import settle, text_of, wait_until

pytestmark = pytest.mark.anyio

RECORDING = {"code": "recording-off", "severity": "fail", "label": "recording off", "reason": "r", "fix": "f"}
LEDGER = {"code": "ledger-unreadable", "severity": "fail", "label": "ledger unreadable", "reason": "l", "fix": "f"}
PAUSED = {"code": "surgery-off", "severity": "info", "label": "paused", "reason": "p", "fix": "`scalpel resume`"}


def running(*items: dict) -> ProxyState:
    return ProxyState(True, {"degraded": list(items), "requests_today": None})


def test_the_line_names_what_needs_a_look_and_its_tooltip_says_why():
    assert notice(None, "") == (None, "")
    assert notice(running(PAUSED), "") == (None, "")  # a pause is the user's choice: the bar says it
    line, tip = notice(running(RECORDING), "")
    assert "recording off" in line.plain and "scalpel doctor" in line.plain
    assert tip == "r\n  fix: f"
    line, _ = notice(ProxyState(False), "DatabaseError: file is not a database")  # no proxy: the dashboard's own read
    assert line.plain.startswith("⚠ ledger unreadable")
    line, _ = notice(running(LEDGER, RECORDING), "DatabaseError: file is not a database")
    assert line.plain.count("ledger unreadable") == 1  # the proxy and the dashboard agree: said once


def test_today_is_unknown_when_the_proxy_could_not_read_it():
    assert today_words({"requests_today": None}) == "unknown"
    assert today_words({"requests_today": 1234}) == "1,234"


async def test_a_ledger_that_cannot_be_read_is_one_notice_not_a_toast_per_refresh():
    """A real proxy over a folder where the ledger file should be (root can write a read-only folder,
    but no one opens a folder as a SQLite file). Many refreshes: no toast, one notice, today unknown."""
    dirs().database.mkdir(parents=True)
    rt = Runtime(Config.load(), {"anthropic_upstream": "http://127.0.0.1:9"}, port=0).start()
    try:
        app = make_app(refresh_s=0.1)
        toasts: list[str] = []
        app.notify = lambda message, **kw: toasts.append(message)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            assert await wait_until(pilot, lambda: "recording off" in text_of(app, "#notice"))
            ticks = app.proxy_state
            await pilot.pause(0.5)  # five refreshes
            await settle(pilot)
            assert app.proxy_state is not ticks  # it did poll again meanwhile
            assert toasts == []
            shown = text_of(app, "#notice")
            assert app.query_one("#notice").display
            for label in ("ledger unreadable", "recording off", "surgery off"):
                assert shown.count(label) == 1, shown
            assert "surgery OFF" in text_of(app, "#proxy-bar") and "cutting" not in text_of(app, "#proxy-bar")
            assert "unknown" in text_of(app, "#sessions-summary")
            await pilot.press("5")
            await settle(pilot)
            assert "requests today unknown" in text_of(app, "#proxy-box")
    finally:
        rt.stop()
