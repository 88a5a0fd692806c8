"""tui/messages.py: the dashboard's messages; a newer poll or load replaces one still waiting.

Checked in a running Textual app: messages posted before the app gets to them
are handled once each, except a ``*Loaded`` / ``ProxyPolled`` followed by one
of its own kind, which only the newer of the two reaches.
"""

from __future__ import annotations

import pytest
from textual.app import App

from scalpel_desktop.tui import messages as m
from scalpel_desktop.tui.data import DecisionsData, SavingsData, SessionsData
from scalpel_desktop.tui.inventory import ToolsData
from scalpel_desktop.tui.proxy import ActionResult, ProxyState
from scalpel_desktop.tui.views_data import UsageData

pytestmark = pytest.mark.anyio

REPLACEABLE = [
    (m.ProxyPolled, lambda i: ProxyState(False, detail=str(i))),
    (m.SessionsLoaded, lambda i: SessionsData(float(i))),
    (m.SavingsLoaded, lambda i: SavingsData(float(i))),
    (m.DecisionsLoaded, lambda i: DecisionsData(float(i))),
    (m.ToolsLoaded, lambda i: ToolsData(float(i), False)),
    (m.UsageLoaded, lambda i: UsageData(float(i))),
]
KEPT = [
    lambda i: m.LoadFailed("sessions", f"error {i}"),
    lambda i: m.ControlRequested(f"pause {i}", "pause"),
    lambda i: m.ActionDone(ActionResult(f"x{i}", True, "done")),
    lambda i: m.ReloadRequested(f"pane {i}"),
]


class Recorder(App):
    """Handles every dashboard message by noting it."""

    def __init__(self):
        super().__init__()
        self.seen: list = []

    def note(self, message) -> None:
        self.seen.append(message)


for _kind in (*(k for k, _ in REPLACEABLE), m.LoadFailed, m.ControlRequested, m.ActionDone, m.ReloadRequested):
    setattr(Recorder, _kind.handler_name, Recorder.note)  # on_proxy_polled, on_sessions_loaded, ...


def test_a_loaded_message_replaces_only_its_own_kind():
    for kind, payload in REPLACEABLE:
        one = kind(payload(1))
        assert one.can_replace(kind(payload(2)))
        others = [k(p(1)) for k, p in REPLACEABLE if k is not kind] + [make(1) for make in KEPT]
        assert not any(one.can_replace(o) for o in others), kind
    for make in KEPT:
        assert not make(1).can_replace(make(2))


def test_a_control_request_carries_its_own_payload():
    a, b = m.ControlRequested("pause", "pause"), m.ControlRequested("resume", "resume")
    a.payload["x"] = 1
    assert b.payload == {}  # not one dict shared by every message


async def test_in_the_app_a_waiting_load_is_replaced_and_the_rest_are_all_handled():
    app = Recorder()
    async with app.run_test() as pilot:
        await pilot.pause()
        app.seen.clear()
        for kind, payload in REPLACEABLE:  # two of each kind back to back, before the app runs
            app.post_message(kind(payload(1)))
            app.post_message(kind(payload(2)))
        for make in KEPT:
            app.post_message(make(1))
            app.post_message(make(2))
        await pilot.pause()
        await pilot.pause()
    replaced = [msg for msg in app.seen if isinstance(msg, tuple(k for k, _ in REPLACEABLE))]
    assert [type(msg) for msg in replaced] == [k for k, _ in REPLACEABLE]  # one of each kind
    assert all((msg.state.detail if isinstance(msg, m.ProxyPolled) else msg.data.now) in ("2", 2.0) for msg in replaced)
    kept = [msg for msg in app.seen if msg not in replaced]
    assert kept == [make(i) for make in KEPT for i in (1, 2)]
