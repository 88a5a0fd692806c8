"""What the filter sends is accepted by the emulated upstream (strict like the real API)."""

from __future__ import annotations

import json
import urllib.request

from scalpel_desktop.config import Config
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.runtime import Runtime
from scalpel_desktop.tools import removals
from scalpel_desktop.tools.store import ToolStore
from scalpel_desktop.wire.jsoncodec import dumps
from tests.tools.bodies import CC_TOOLS, body, tool


def post(url: str, doc: dict, session: str) -> tuple[int, dict]:
    req = urllib.request.Request(url + "/v1/messages", data=dumps(doc), method="POST", headers={
        "content-type": "application/json", "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01",
        "user-agent": "claude-cli/2.1.332 (external, sdk-cli)", "x-claude-code-session-id": session})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_history_calling_a_removed_tool_is_still_accepted(tmp_path, with_tool_stages):
    store = ToolStore.open()
    removals.remove(store, "Workflow", source="cli", force=True)
    cfg = Config.load()
    cfg.set("tool_filter", True)
    cfg.save()
    with running_emulator("text") as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url}, port=0).start()
        try:
            url = f"http://127.0.0.1:{rt.port}"
            first = body([tool(n) for n in CC_TOOLS], session="hist", stream=False)
            status, _ = post(url, first, "hist")
            assert status == 200
            assert "Workflow" not in [t["name"] for t in emu.api_requests[-1].json()["tools"]]
            # later in the same session: an earlier turn called Workflow (e.g. before a resume)
            later = body([tool(n) for n in CC_TOOLS], session="hist", turns=4,
                         calls=["Bash", "Workflow", "Read", "Bash"], stream=False)
            status, answer = post(url, later, "hist")
            assert status == 200, answer
            sent = emu.api_requests[-1].json()
            assert "Workflow" not in [t["name"] for t in sent["tools"]]
            assert any(b.get("name") == "Workflow" for m in sent["messages"] if isinstance(m["content"], list)
                       for b in m["content"] if b.get("type") == "tool_use")
            # a pending call to the removed tool: the request goes through untouched
            pending = body([tool(n) for n in CC_TOOLS], session="hist", turns=5,
                           calls=["Bash", "Workflow", "Read", "Bash", "Workflow"], stream=False)
            status, _ = post(url, pending, "hist")
            assert status == 200
            assert "Workflow" in [t["name"] for t in emu.api_requests[-1].json()["tools"]]
        finally:
            rt.stop()

