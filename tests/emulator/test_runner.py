"""The emulator in a thread: the shared AppThread with the emulator's app."""

from __future__ import annotations

import json
import urllib.request

from scalpel_desktop.emulator.runner import EmulatorThread
from scalpel_desktop.emulator.server import Emulator
from scalpel_desktop.proxy.app_thread import AppThread


def test_emulator_thread_is_the_shared_runner_and_serves_its_app():
    emulator = Emulator(None, require_auth=False)
    with EmulatorThread(emulator) as t:
        assert isinstance(t, AppThread) and t.port != 0
        req = urllib.request.Request(t.url + "/v1/messages", method="POST", headers={"content-type": "application/json"},
                                     data=json.dumps({"model": "m", "max_tokens": 5,
                                                      "messages": [{"role": "user", "content": "hi"}]}).encode())
        with urllib.request.urlopen(req, timeout=10) as r:
            assert json.loads(r.read())["type"] == "message"
        assert [r.endpoint for r in emulator.received] == ["messages"]
    assert not t.running
