"""tools/router/recent.py: recently called tools per upstream command, in a small state file."""

from __future__ import annotations

from scalpel_desktop.paths import dirs
from scalpel_desktop.tools.router import recent


def test_remember_puts_the_name_first_once_and_load_reads_it_back():
    cmd = ["npx", "server-github"]
    r = recent.remember(cmd, [], "a")
    r = recent.remember(cmd, r, "b")
    r = recent.remember(cmd, r, "a")
    assert r == ["a", "b"]
    assert recent.load(cmd) == ["a", "b"]
    assert recent.load(["another", "command"]) == []


def test_the_file_lives_under_the_state_dir_and_keeps_twenty():
    cmd = ["srv"]
    r: list[str] = []
    for i in range(30):
        r = recent.remember(cmd, r, f"t{i}")
    assert len(r) == recent.KEEP and r[0] == "t29"
    path = recent.state_file(cmd)
    assert path.parent == dirs().state / "mcp-router" and path.exists()
    assert recent.state_file(["srv", ""]) != path  # the arguments are part of the key


def test_a_damaged_file_reads_as_no_history():
    cmd = ["srv"]
    path = recent.state_file(cmd)
    path.parent.mkdir(parents=True, exist_ok=True)
    for junk in ("{not json", "[1, 2]", "", "\xff"):
        path.write_text(junk)
        assert recent.load(cmd) == []
