"""Stubs: deterministic, short, home-relative, shaped like the content they replace."""

from __future__ import annotations

import os

from scalpel_desktop.accounting.tokens import estimate_tokens
from scalpel_desktop.paths import dirs, user_home
from scalpel_desktop.surgery.stub import REASONS, spill_display_dir, stub_content, stub_text

SHA = "ab" + "0123456789abcdef" * 3 + "0123456789abcd"


def test_text_is_deterministic_short_and_names_reason_size_and_place(monkeypatch):
    home = user_home()
    monkeypatch.setenv("SCALPEL_HOME", str(home / ".local" / "share" / "scalpel-desktop"))
    d = spill_display_dir(dirs().spill)
    assert d == "~/.local/share/scalpel-desktop/data/spill"
    for kind in REASONS:
        t = stub_text(kind, 2340, SHA, 1, d)
        assert t == stub_text(kind, 2340, SHA, 1, d)
        assert t.startswith("[scalpel: ") and "~2,340 tokens" in t and f"{d}/ab/{SHA} ]" in t
        assert str(home) not in t and os.path.basename(str(home.parent)) not in t
        assert estimate_tokens(t) <= 60


def test_home_relative_display(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert spill_display_dir(tmp_path / ".local/share/scalpel/spill") == "~/.local/share/scalpel/spill"


def test_shapes_and_markers():
    assert stub_content("orig", "S") == "S"
    assert stub_content(None, "S") == "S"
    assert stub_content([{"type": "text", "text": "a"}, {"type": "image"}], "S") == [{"type": "text", "text": "S"}]
    cc = {"type": "ephemeral", "ttl": "1h"}
    assert stub_content([{"type": "text", "text": "a", "cache_control": cc}], "S", "input_text") == [
        {"type": "input_text", "text": "S", "cache_control": cc}]
