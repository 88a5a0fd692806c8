"""Fixtures for the tools tests: the tool stages inside a real runtime."""

from __future__ import annotations

import pytest

from scalpel_desktop.pipeline import assemble


@pytest.fixture
def with_tool_stages(monkeypatch):
    """The tool stages in the runtime's pipeline, as the lead wires them (if not yet wired)."""
    from scalpel_desktop.tools.filter_stage import tool_stages
    from scalpel_desktop.tools import actions

    original = assemble.default_stages
    original_actions = assemble.register_actions

    def stages(config, *, ledger=None, **kw):
        out = original(config, ledger=ledger, **kw)
        if not any(getattr(s, "name", "") == "tool_filter" for s in out):
            inventory, tool_filter = tool_stages(config)
            out[1:1] = [inventory, tool_filter]
        return out

    def register(runtime):
        original_actions(runtime)
        if "tools" not in getattr(runtime, "_actions", {}):
            actions.register(runtime)

    monkeypatch.setattr(assemble, "default_stages", stages)
    monkeypatch.setattr(assemble, "register_actions", register)
