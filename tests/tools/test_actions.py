"""tools/actions.py: the control-API ``tools`` action, over a fake runtime and a real tool store."""

from __future__ import annotations

import pytest

from scalpel_desktop.config import Config
from scalpel_desktop.tools import actions
from scalpel_desktop.tools.store import ToolStore


class FakePins:
    forgotten = 0

    def forget(self):
        self.forgotten += 1


class FakeStage:
    name = "tool_filter"

    def __init__(self):
        self.pins = FakePins()


class FakeChain:
    def __init__(self, stages):
        self.stages = stages

    def get(self, name):
        return next((s for s in self.stages if s.name == name), None)


class FakeRuntime:
    def __init__(self):
        self.settings = {"tool_filter": False}
        self.actions = {}
        self.pipeline = FakeChain([FakeStage()])

    def setting(self, key):
        return self.settings.get(key)

    def set_settings(self, values):
        self.settings.update(values)

    def register_action(self, name, fn):
        self.actions[name] = fn


@pytest.fixture
def rt():
    r = FakeRuntime()
    actions.register(r)
    return r


def history():
    s = ToolStore.open()
    try:
        return [(h["action"], h["name"], h["source"]) for h in s.history()]
    finally:
        s.close()


def test_register_adds_the_tools_action(rt):
    assert rt.actions["tools"]({"op": "history"}) == {"ok": True, "op": "history", "history": []}


@pytest.mark.parametrize("payload, message", [
    ([], "tools: expected a JSON object"),
    ({"op": "explode"}, "tools: op must be one of remove, restore"),
    ({"op": "list", "source": "web"}, "tools: source must be one of cli, tray"),
    ({"op": "remove", "name": "Bash"}, "Bash is a Claude Code built-in"),
    ({"op": "remove", "name": "a b"}, "is not a tool name"),
])
def test_bad_requests_are_4xx_errors_that_say_what_is_wrong(rt, payload, message):
    with pytest.raises(Exception, match=message) as e:
        actions.handle(rt, payload)
    assert getattr(e.value, "status", None) == 400


def test_remove_and_restore_are_recorded_with_their_source(rt):
    res = actions.handle(rt, {"op": "remove", "name": "Bash", "force": True, "source": "tray"})
    assert res["ok"] and res["changed"] and res["builtin"]
    assert actions.handle(rt, {"op": "restore", "name": "Bash", "source": "dashboard"})["changed"]
    assert history() == [("remove", "Bash", "tray"), ("restore", "Bash", "dashboard")]


def test_on_and_off_change_the_live_setting_and_record_only_changes(rt):
    assert actions.handle(rt, {"op": "on"}) == {"ok": True, "op": "on", "tool_filter": True, "changed": True}
    assert actions.handle(rt, {"op": "on"})["changed"] is False
    assert rt.settings["tool_filter"] is True
    assert history() == [("on", "", "control_api")]


def test_list_reads_the_live_setting(rt):
    rt.settings["tool_filter"] = True
    out = actions.handle(rt, {"op": "list"})
    assert out["tool_filter"] is True and out["tools"] == []


def test_forget_pins_and_now_drop_the_filter_stages_cached_pins(rt):
    stage = rt.pipeline.stages[0]
    actions.handle(rt, {"op": "forget_pins"})
    actions.handle(rt, {"op": "remove", "name": "mcp__gh", "now": True})
    actions.handle(rt, {"op": "restore", "name": "mcp__gh"})
    assert stage.pins.forgotten == 2


# through a real runtime and its control API


def test_control_api_action_records_its_source(with_tool_stages):
    from scalpel_desktop.control_client import ControlClient, ControlError
    from scalpel_desktop.runtime import Runtime

    rt = Runtime(Config.load(), port=0).start()
    try:
        client = ControlClient.discover()
        res = client.action("tools", {"op": "remove", "name": "mcp__slack", "source": "tray"})
        assert res["ok"] and res["changed"]
        with pytest.raises(ControlError) as e:
            client.action("tools", {"op": "remove", "name": "Bash", "source": "dashboard"})
        assert "the model loses" in str(e.value)
        client.action("tools", {"op": "remove", "name": "Bash", "force": True, "source": "dashboard"})
        client.action("tools", {"op": "on"})
        assert rt.setting("tool_filter") is True
        assert client.action("tools", {"op": "list"})["tool_filter"] is True
        with pytest.raises(ControlError):
            client.action("tools", {"op": "remove", "name": "x", "source": "somewhere"})
        hist = client.action("tools", {"op": "history"})["history"]
        assert [(h["action"], h["name"], h["source"]) for h in hist] == [
            ("remove", "mcp__slack", "tray"), ("remove", "Bash", "dashboard"), ("on", "", "control_api")]
    finally:
        rt.stop()
