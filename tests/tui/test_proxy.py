"""tui/proxy.py: the dashboard's line to the proxy; a poll or an action never raises, and says why.

A real proxy (``Runtime`` on a free port) for the happy path; for the ways a
link breaks, client objects standing in for ``ControlClient`` (``make_app``
accepts any object with ``status()`` and ``action()``, or a callable returning one).
"""

from __future__ import annotations

import json

import pytest

from scalpel_desktop.config import KEYS, Config
from scalpel_desktop.control_client import ControlError
from scalpel_desktop.paths import dirs
from scalpel_desktop.tui.proxy import NOT_RUNNING, SHOWN_SETTINGS, ActionResult, ProxyLink, ProxyState, _short_error, saved_settings


class Client:
    def __init__(self, status=None, answer=None, error: Exception | None = None):
        self._status, self._answer, self._error = status, answer, error
        self.actions: list = []

    def status(self):
        if self._error:
            raise self._error
        return self._status

    def action(self, name, payload):
        self.actions.append((name, payload))
        if self._error:
            raise self._error
        return self._answer


def _save(values: dict) -> None:
    dirs().config.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text(json.dumps(values))


def test_a_running_proxy_is_polled_and_acted_on_through_its_control_api(isolated_home):
    from scalpel_desktop.runtime import Runtime

    rt = Runtime(Config.load(), {"anthropic_upstream": "http://127.0.0.1:9"}, port=0).start()
    try:
        link = ProxyLink()  # no client given: discovered from the runtime file, as the dashboard does
        state = link.poll()
        assert state.running and state.port == rt.port and state.reason == ""
        assert set(state.settings) == set(SHOWN_SETTINGS) and state.settings["paused"] is False
        done = link.act("pause", "pause")
        assert done == ActionResult("pause", True, "pause", done.answer) and rt.setting("paused") is True
        assert link.poll().settings["paused"] is True
        refused = link.act("tier 7", "settings", {"tier": 7})
        assert not refused.ok and "tier" in refused.message and "HTTP" not in refused.message
        assert rt.setting("tier") == 2
    finally:
        rt.stop()


def test_no_proxy_shows_the_saved_settings_and_why_the_toggles_are_off(isolated_home):
    _save({"tier": 1, "policy": "payback"})
    state = ProxyLink().poll()
    assert not state.running and state.port is None and state.reason == NOT_RUNNING
    assert "scalpel is not running" in state.detail
    assert state.settings == {"paused": False, "tier": 1, "policy": "payback", "tool_filter": KEYS["tool_filter"].default}
    done = ProxyLink().act("pause", "pause")
    assert not done.ok and "scalpel is not running" in done.message


def test_an_unreadable_config_shows_the_defaults(isolated_home):
    dirs().config.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text("{not json")
    assert saved_settings() == {k: KEYS[k].default for k in SHOWN_SETTINGS}


@pytest.mark.parametrize("control", [Client({"running": True, "port": 4321, "tier": 1}),
                                     lambda: Client({"running": True, "port": 4321, "tier": 1})],
                         ids=["client", "factory"])
def test_a_client_or_a_factory_of_clients(isolated_home, control):
    state = ProxyLink(control).poll()
    assert state.running and state.port == 4321
    assert state.settings == {"paused": None, "tier": 1, "policy": None, "tool_filter": None}


@pytest.mark.parametrize("error, detail", [(ControlError("GET /_scalpel/status: HTTP 500: boom", 500),
                                            "GET /_scalpel/status: HTTP 500: boom"),
                                           (ValueError("bad json"), "ValueError: bad json")])
def test_a_broken_link_is_a_state_not_an_exception(isolated_home, error, detail):
    state = ProxyLink(Client(error=error)).poll()
    assert state == ProxyState(False, {}, saved_settings(), NOT_RUNNING, detail)


def test_a_proxy_that_says_it_is_not_running(isolated_home):
    state = ProxyLink(Client({"running": False, "port": 4242})).poll()
    assert not state.running and state.port is None  # no port shown for a proxy that is not running
    assert state.reason == NOT_RUNNING and state.detail == "the proxy says it is not running"
    assert state.settings == saved_settings()


def test_action_answers():
    link = ProxyLink(Client(answer={"ok": True, "tier": 1}))
    assert link.act("tier 1", "settings", {"tier": 1}) == ActionResult("tier 1", True, "tier 1", {"ok": True, "tier": 1})
    assert link.client().actions == [("settings", {"tier": 1})]
    assert ProxyLink(Client(answer={"ok": False, "error": "no such tool"})).act("x", "tools").message == "no such tool"
    assert ProxyLink(Client(answer={"ok": False})).act("x", "tools").message == "refused"
    assert ProxyLink(Client(answer=["odd"])).act("x", "tools") == ActionResult("x", True, "x", {})
    failed = ProxyLink(Client(error=ControlError("/_scalpel/control/tools: HTTP 400: unknown op", 400))).act("x", "tools")
    assert not failed.ok and failed.message == "unknown op"
    boom = ProxyLink(Client(error=OSError("reset"))).act("x", "tools")
    assert not boom.ok and boom.message == "OSError: reset"


@pytest.mark.parametrize("message, short", [
    ("/_scalpel/control/tools: HTTP 400: X", "X"),
    ("/_scalpel/control/tools: HTTP 400: X: with a colon", "X: with a colon"),
    ("connection refused", "connection refused"),
    ("a: b: c", "a: b: c"),  # not an HTTP error: said as it is
])
def test_short_error_keeps_only_what_the_proxy_said(message, short):
    assert _short_error(message) == short
