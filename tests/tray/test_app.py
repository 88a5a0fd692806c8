"""The tray app end to end on the dummy backend, and what Quit does with autopilot.

Quit decision (docs/desktop.md): with autopilot on, the login service owns the
proxy, so Quit leaves it serving and Claude Code's settings keep working; a
proxy the tray owns is stopped, and settings still pointing at scalpel with no
service behind them are restored.
"""

from __future__ import annotations

import json
import threading

import pytest

from scalpel_desktop.service import autopilot
from scalpel_desktop.service.probe import health
from scalpel_desktop.service.settings_file import settings_path
from scalpel_desktop.tray.app import TrayApp, TrayLink


def _run_and_quit(app: TrayApp, *commands: str) -> None:
    def driver():
        app.icon.ready.wait(30)
        for c in commands:
            app.dispatcher.dispatch(c)
        app.emit("quit")

    t = threading.Thread(target=driver)
    t.start()
    app.run()  # returns once Quit stopped the icon
    t.join(30)


def test_tray_owns_a_proxy_and_quit_stops_it(pystray_dummy, own_runtime_link):
    link = own_runtime_link
    assert link.attach_or_start() == "owned"
    port = link.runtime.port
    app = TrayApp(pystray_dummy, link)
    assert app.icon.title.startswith("scalpel-desktop (active)")
    _run_and_quit(app, "toggle_pause")
    assert app.dispatcher.history == [("toggle_pause", True), ("quit", True)]
    assert app.icon.icon is not None and app._shown == "paused"
    assert health(port) is None and not link.owns_proxy


def test_scalpel_stop_ends_the_tray_with_its_proxy(pystray_dummy, own_runtime_link, capsys):
    """`scalpel stop` stops the tray's own proxy through the control API; the tray quits with it,
    so stop sees the process's proxy gone at once instead of waiting and saying it still runs."""
    from scalpel_desktop.cli import main

    link = own_runtime_link
    assert link.attach_or_start() == "owned"
    port = link.runtime.port
    app = TrayApp(pystray_dummy, link)
    done = threading.Event()

    def stopper():
        app.icon.ready.wait(30)
        main(["stop", "--timeout", "0"])  # this process stays alive: do not wait for it
        done.set()

    t = threading.Thread(target=stopper)
    t.start()
    app.run()  # returns once the watcher has quit the tray
    t.join(30)
    assert done.is_set() and health(port) is None and not link.owns_proxy
    assert app.dispatcher.history == []  # no menu command: the stop came from outside
    assert app._stop.is_set()


def test_quit_with_autopilot_on_keeps_the_service_and_the_settings(pystray_dummy, process_service):
    port = process_service
    path = settings_path()
    autopilot.on(timeout=30)
    before = path.read_bytes()
    link = TrayLink()
    assert link.attach_or_start() == "attached"
    app = TrayApp(pystray_dummy, link)
    assert app.dispatcher.state.autopilot and app.dispatcher.state.running
    _run_and_quit(app, "tier:1")
    assert health(port) is not None  # the service still serves the port
    assert path.read_bytes() == before
    assert json.loads(before)["env"]["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{port}"
    autopilot.off()


def test_quit_restores_settings_that_point_at_a_port_nobody_will_serve(pystray_dummy, isolated_home):
    from scalpel_desktop.runtime import Runtime
    from scalpel_desktop.service.settings_file import ClaudeSettings
    from tests.support import free_port

    port = free_port()
    from scalpel_desktop.config import Config

    cfg = Config.load()
    cfg.set("port", port)
    cfg.save()
    original = b'{"model": "opus"}\n'
    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(original)

    def point(doc):
        doc.setdefault("env", {})["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{port}"
        return {("env", "ANTHROPIC_BASE_URL"): ClaudeSettings.MISSING}

    ClaudeSettings().apply("autopilot", point)  # e.g. the service was removed by hand
    link = TrayLink(runtime_factory=lambda: Runtime())
    assert link.attach_or_start() == "owned"
    _run_and_quit(TrayApp(pystray_dummy, link))
    assert path.read_bytes() == original


def test_toggle_autopilot_from_the_tray_hands_the_port_over_and_back(pystray_dummy, process_service):
    from scalpel_desktop.runtime import Runtime
    from scalpel_desktop.service.process_backend import ProcessBackend

    port = process_service
    link = TrayLink(runtime_factory=lambda: Runtime())
    assert link.attach_or_start() == "owned"
    app = TrayApp(pystray_dummy, link)
    assert app.dispatcher.dispatch("toggle_autopilot"), app.dispatcher.state.message
    assert app.dispatcher.state.autopilot and not link.owns_proxy
    assert health(port)["pid"] == ProcessBackend().pid()
    assert app.dispatcher.dispatch("toggle_autopilot"), app.dispatcher.state.message
    assert not app.dispatcher.state.autopilot and link.owns_proxy
    assert ProcessBackend().pid() is None and health(port) is not None
    assert not settings_path().exists()
    link.stop_own()


def test_no_backend_is_a_result_not_a_cli_call(isolated_home, monkeypatch):
    from scalpel_desktop.tray import app as tray_app
    from scalpel_desktop.tray import backend

    monkeypatch.setattr(backend, "choose", lambda: backend.BackendChoice(None, "none", "no display", "use a desktop"))
    assert tray_app.run_tray() == tray_app.NoTrayBackend("no display", "use a desktop")


def test_a_proxy_that_cannot_start_is_a_tray_error(isolated_home, monkeypatch, pystray_dummy):
    from scalpel_desktop.tray import app as tray_app
    from scalpel_desktop.tray import backend

    monkeypatch.setattr(backend, "choose", lambda: backend.BackendChoice(pystray_dummy, "dummy"))

    def refuse(self):
        raise OSError("port 4242 is taken")

    monkeypatch.setattr(tray_app.TrayLink, "attach_or_start", refuse)
    with pytest.raises(tray_app.TrayStartError, match="cannot start the proxy for the tray: port 4242 is taken"):
        tray_app.run_tray()


def _seed_today_and_yesterday():
    """Rows through the real writer: three today (thousands of tokens), one yesterday."""
    from scalpel_desktop import clock
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.store.ledger import LedgerWriter

    now = clock.now()
    w = LedgerWriter(dirs().database)
    for i in range(3):
        w.submit({"ts": now - i, "session": "s", "endpoint": "messages", "status": 200,
                  "realized_tokens": 1000 * (i + 1) + 234, "realized_usd": 0.0125})
    w.submit({"ts": clock.start_of_today(now) - 5, "session": "s", "endpoint": "messages", "status": 200,
              "realized_tokens": 50_000, "realized_usd": 2.0})
    assert w.flush(timeout=30)
    w.close()


def _shown_equal_the_readers(link):
    from scalpel_desktop.store.ledger_queries import today_savings_or_zero
    from scalpel_desktop.tray.dispatcher import Dispatcher

    d = Dispatcher(link, on_quit=lambda: None)
    state = d.refresh()
    today = today_savings_or_zero()
    assert (today.tokens, today.requests) == (6702, 3)  # yesterday's row left out
    figure = f"{today.tokens:,} tokens (${today.usd:,.2f})"
    assert figure == "6,702 tokens ($0.04)"
    assert state.status_line() == f"scalpel active on :{state.port} - saved {figure} today"
    assert state.tooltip() == f"scalpel-desktop (active): saved {figure} today, {today.requests} requests"


def test_todays_figures_all_come_from_the_ledger(own_runtime_link):
    """Savings and the request count for 'today' share one source: after a proxy
    restart its own counter starts again at zero, the ledger does not."""
    _seed_today_and_yesterday()
    link = own_runtime_link
    assert link.attach_or_start() == "owned"
    snap = link.status()
    assert snap["requests_today"] == 3  # not the fresh proxy's 0
    assert snap["saved_tokens_today"] == 6702
    _shown_equal_the_readers(link)


def test_an_attached_tray_shows_the_same_figures(isolated_home):
    from scalpel_desktop.runtime import Runtime
    from scalpel_desktop.tray.app import TrayLink

    _seed_today_and_yesterday()
    rt = Runtime(port=0).start()
    try:
        link = TrayLink(runtime_factory=lambda: pytest.fail("the tray must attach, not start its own proxy"))
        assert link.attach_or_start() == "attached"
        _shown_equal_the_readers(link)
    finally:
        rt.stop()


def _seed_misses_today_and_yesterday() -> list[dict]:
    """Cache misses through the real writer: two today, one yesterday (not today's)."""
    from scalpel_desktop import clock
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.store.ledger import LedgerWriter

    now = clock.now()
    rows = [{"ts": now - 120, "session": "s", "endpoint": "messages", "status": 200, "miss_cause": "ttl-expired",
             "miss_tokens": 40_000, "miss_usd": 0.138},
            {"ts": now - 60, "session": "t", "endpoint": "messages", "status": 200, "miss_cause": "tools-changed",
             "miss_tokens": 9_000, "miss_usd": 0.03105},
            {"ts": clock.start_of_today(now) - 5, "session": "s", "endpoint": "messages", "status": 200,
             "miss_cause": "ttl-expired", "miss_tokens": 90_000, "miss_usd": 3.5}]
    w = LedgerWriter(dirs().database)
    for r in rows:
        w.submit(r)
    assert w.flush(timeout=30)
    w.close()
    return [r for r in rows if r["ts"] >= clock.start_of_today(now)]


def test_the_tooltip_gives_todays_miss_cost_from_the_ledger(own_runtime_link):
    from scalpel_desktop.tray.dispatcher import Dispatcher

    link = own_runtime_link
    assert link.attach_or_start() == "owned"
    d = Dispatcher(link, on_quit=lambda: None)
    assert "miss" not in d.refresh().tooltip()  # no miss yet: the tooltip stays as it was
    today = _seed_misses_today_and_yesterday()
    state = d.refresh()
    assert state.misses_today == len(today) and abs(state.miss_usd_today - sum(r["miss_usd"] for r in today)) < 1e-9
    assert state.tooltip().endswith(f"; misses today ${sum(r['miss_usd'] for r in today):,.2f}")


def test_misses_today_is_unknown_not_zero_when_the_ledger_cannot_be_read(isolated_home):
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.tray.app import misses_today

    assert misses_today() == {"misses_today": 0, "miss_usd_today": 0.0}  # no ledger yet: none today
    dirs().database.parent.mkdir(parents=True, exist_ok=True)
    dirs().database.write_bytes(b"not a database" * 500)
    assert misses_today() == {"misses_today": None, "miss_usd_today": None}


def test_a_proxy_that_reports_misses_itself_is_not_second_guessed(isolated_home):
    from scalpel_desktop.tray.app import TrayLink

    _seed_misses_today_and_yesterday()
    link = TrayLink()

    class Client:
        def status(self):
            return {"port": 1, "misses_today": 9, "miss_usd_today": 1.5}

    link._client = lambda: Client()
    snap = link.status()
    assert (snap["misses_today"], snap["miss_usd_today"]) == (9, 1.5)
