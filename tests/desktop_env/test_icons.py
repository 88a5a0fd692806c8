"""The state icons: one per state, 128 px RGBA, drawn once, saved as PNG."""

from __future__ import annotations

from PIL import Image

from scalpel_desktop.desktop_env.icons import STATES, icon_image, save_png


def test_icons_one_per_state_at_128px():
    images = [icon_image(s) for s in STATES]
    assert all(i.size == (128, 128) and i.mode == "RGBA" for i in images)
    assert len({i.tobytes() for i in images}) == 4
    assert icon_image("active") is icon_image("active")  # drawn once


def test_an_unknown_state_draws_the_error_icon():
    assert icon_image("no-such-state").tobytes() == icon_image("error").tobytes()


def test_save_png_writes_a_readable_png(tmp_path):
    path = save_png("paused", tmp_path / "a" / "b" / "icon.png")
    with Image.open(path) as img:
        assert img.format == "PNG" and img.size == (128, 128)
        assert img.convert("RGBA").tobytes() == icon_image("paused").tobytes()
