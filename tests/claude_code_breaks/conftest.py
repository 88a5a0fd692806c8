"""Every test here runs the real Claude Code CLI 2.1.332 (skipped without it, failed under CI=true)."""

from __future__ import annotations

import pytest

from tests.support import claude_bin
from tests.support.claude_breaks import Live


@pytest.fixture
def live(tmp_path):
    claude_bin()
    with Live(tmp_path) as lv:
        yield lv


def assert_append(step, prev) -> None:
    """A pure append: nothing earlier changed, the economist's break is the end of the
    previous request, and the emulator read the whole previous request."""
    assert step.diff is None, str(step)
    assert (step.brk, step.reason) == (prev.messages, "append"), str(step)
    assert (step.read.region, step.read.index) == ("messages", prev.messages - 1), str(step)
