"""tui/screens/settings.py: pause, tool filter, tier and policy as the proxy reports them; each
change a control request; all disabled, with the reason, when no proxy runs.

Through a real proxy in tests/tui/test_app.py; here the view alone in a bare
app that records the ``ControlRequested`` messages it posts.
"""

from __future__ import annotations

import pytest
from textual.widgets import RadioButton, RadioSet, Switch

from scalpel_desktop.config import KEYS
from scalpel_desktop.tui.messages import ControlRequested
from scalpel_desktop.tui.proxy import ProxyState
from scalpel_desktop.tui.screens.settings import POLICIES, TIERS, SettingsView
from tests.tui.helpers import host, settle, text_of

pytestmark = pytest.mark.anyio
RUNNING = ProxyState(True, {"port": 4321, "pid": 77, "state": "serving", "uptime_s": 3725, "requests_today": 1234,
                            "errors": 2, "restarts": 1, "recording": False, "last_error": "upstream timed out"},
                     {"paused": True, "tier": 1, "policy": "payback", "tool_filter": False})
STOPPED = ProxyState(False, {}, {"paused": False, "tier": 2, "policy": "death", "tool_filter": True},
                     "no proxy running (start: `scalpel start` or the tray)", "no runtime file in /tmp/x")


def picked(app, set_id: str) -> list[str]:
    return [b.id for b in app.query_one(set_id, RadioSet).query(RadioButton) if b.value]


def test_the_choices_are_the_settings_own():
    assert [v for v, _ in TIERS] == list(KEYS["tier"].choices)
    assert [v for v, _ in POLICIES] == list(KEYS["policy"].choices)


async def test_a_running_proxy_its_values_and_each_change_a_control_request():
    app = host(lambda: SettingsView(id="settings"), css="SettingsView { height: 1fr; }")
    async with app.run_test(size=(80, 40)) as pilot:
        view = app.query_one("#settings", SettingsView)
        view.show_proxy(RUNNING, 0.0)
        await settle(pilot)
        box = text_of(app, "#proxy-box")
        assert box.startswith("● proxy running on 127.0.0.1:4321  pid 77  state serving  up 1h 02m")
        assert "requests today 1,234  errors 2  restarts 1  recording NO" in box
        assert "last error upstream timed out" in box
        assert text_of(app, "#settings-reason") == "Changes apply live and are saved to the config file."
        pause, filt = app.query_one("#pause-switch", Switch), app.query_one("#filter-switch", Switch)
        assert (pause.value, filt.value, pause.disabled, filt.disabled) == (True, False, False, False)
        assert picked(app, "#tier-set") == ["tier-1"] and picked(app, "#policy-set") == ["policy-payback"]
        assert app.posted == []  # showing the proxy's values asks for nothing
        await pilot.click("#pause-switch")
        await pilot.click("#filter-switch")
        await pilot.click("#tier-2")
        await pilot.click("#policy-off")
        await settle(pilot)
        assert app.posted == [ControlRequested("resume", "resume", {}),
                              ControlRequested("tool filter on", "tools", {"op": "on", "source": "dashboard"}),
                              ControlRequested("tier 2", "settings", {"tier": 2}),
                              ControlRequested("policy off", "settings", {"policy": "off"})]
        # the next poll says what the proxy now has; showing it asks for nothing again
        app.posted.clear()
        view.show_proxy(RUNNING, 0.0)
        await settle(pilot)
        assert app.posted == [] and pause.value is True and picked(app, "#tier-set") == ["tier-1"]


async def test_no_proxy_the_saved_values_disabled_with_the_reason():
    app = host(lambda: SettingsView(id="settings"), css="SettingsView { height: 1fr; }")
    async with app.run_test(size=(80, 40)) as pilot:
        view = app.query_one("#settings", SettingsView)
        assert app.query_one("#pause-switch", Switch).disabled  # before the first poll too
        view.show_proxy(STOPPED, 0.0)
        await settle(pilot)
        assert text_of(app, "#proxy-box").startswith("○ no proxy running — showing the saved settings")
        assert text_of(app, "#settings-reason") == f"Controls disabled: {STOPPED.reason}"
        for sid in ("#pause-switch", "#filter-switch", "#tier-set", "#policy-set"):
            widget = app.query_one(sid)
            assert widget.disabled and widget.tooltip == "no runtime file in /tmp/x"
        assert app.query_one("#filter-switch", Switch).value is True
        assert picked(app, "#tier-set") == ["tier-2"] and picked(app, "#policy-set") == ["policy-death"]
        await pilot.click("#pause-switch")
        await pilot.click("#policy-off")
        await settle(pilot)
        assert app.posted == []  # disabled controls ask for nothing
        view.show_proxy(RUNNING, 0.0)
        await settle(pilot)
        assert not app.query_one("#tier-set", RadioSet).disabled and app.query_one("#tier-set").tooltip is None
