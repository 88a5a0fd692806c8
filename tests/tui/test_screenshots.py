"""PNG screenshots of every screen for docs/dashboard.md, taken with a real proxy running.

Each screen is exported as SVG (``App.export_screenshot``) and converted with
``rsvg-convert``, at 120x40 (``tui-<screen>.png``) and at 80x24, the smallest
terminal (``tui-<screen>-80x24.png``). The PNGs in docs/screenshots/ are (re)written when missing or
when the run has ``--snapshot-update`` (they show a live port and pid, so an
ordinary run does not churn them); every run checks that the conversion works.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from scalpel_desktop.config import Config
from scalpel_desktop.runtime import Runtime
from scalpel_desktop.tui.app import make_app
from tests.support import REPO, require
from tests.tui.helpers import PANES, settle
from tests.tui.seed import NOW

pytestmark = pytest.mark.anyio
DOCS = REPO / "docs" / "screenshots"


def svg_to_png(svg: str, svg_path, png_path) -> None:
    # librsvg drops leading spaces of text runs unless told to preserve them.
    svg_path.write_text(svg.replace("<svg ", '<svg xml:space="preserve" ', 1), encoding="utf-8")
    subprocess.run(["rsvg-convert", "-o", str(png_path), str(svg_path)], check=True, timeout=60)


async def test_screenshot_every_screen(seeded, tmp_path, request):
    require(shutil.which("rsvg-convert") is not None, "rsvg-convert (Debian package librsvg2-bin)")
    from scalpel_desktop.tools.actions import register

    update = bool(request.config.getoption("--snapshot-update", default=False))
    rt = Runtime(Config.load(), {"anthropic_upstream": "http://127.0.0.1:9"}, port=0).start()
    register(rt)
    try:
        for size, suffix in (((120, 40), ""), ((80, 24), "-80x24")):
            app = make_app(clock=lambda: NOW)
            async with app.run_test(size=size) as pilot:
                await settle(pilot)
                for i, pane in enumerate(PANES, 1):
                    await pilot.press(str(i))
                    await settle(pilot)
                    await pilot.wait_for_scheduled_animations()
                    await settle(pilot)
                    png = tmp_path / f"tui-{pane}{suffix}.png"
                    svg_to_png(app.export_screenshot(title=f"scalpel tui — {pane}"), tmp_path / f"{pane}.svg", png)
                    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
                    target = DOCS / png.name
                    if update or not target.exists():
                        DOCS.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(png, target)
    finally:
        rt.stop()
