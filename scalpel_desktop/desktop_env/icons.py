"""The tray icon: one Pillow image per state, drawn once at 128 px.

States: ``active`` (proxy running, changes on), ``paused`` (pass-through),
``off`` (no proxy), ``error`` (proxy crashed / unreachable). A blade shape on a
round badge whose colour and mark tell the state, readable at 16 px.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

SIZE = 128
STATES = ("active", "paused", "off", "error")

COLORS = {
    "active": (46, 160, 67, 255),
    "paused": (214, 150, 20, 255),
    "off": (120, 124, 130, 255),
    "error": (207, 34, 46, 255),
}


@lru_cache(maxsize=None)
def icon_image(state: str):
    """The RGBA image for ``state`` (cached: drawn once per process)."""
    from PIL import Image, ImageDraw

    if state not in COLORS:
        state = "error"
    img = Image.new("RGBA", (SIZE, SIZE), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    color = COLORS[state]
    if state == "off":
        d.ellipse((6, 6, SIZE - 6, SIZE - 6), fill=(255, 255, 255, 255), outline=color, width=10)
        blade = (70, 74, 80, 255)
    else:
        d.ellipse((4, 4, SIZE - 4, SIZE - 4), fill=color)
        blade = (255, 255, 255, 255)
    # The blade: a long diagonal wedge with a handle.
    d.polygon([(30, 98), (92, 28), (104, 26), (98, 40), (42, 102)], fill=blade)
    d.line([(22, 108), (40, 90)], fill=blade, width=12)
    if state == "paused":
        for x in (74, 92):
            d.rectangle((x, 70, x + 10, 106), fill=(60, 40, 0, 255))
    elif state == "error":
        d.rectangle((84, 62, 96, 92), fill=(255, 255, 255, 255))
        d.ellipse((84, 98, 96, 110), fill=(255, 255, 255, 255))
    return img


def save_png(state: str, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    icon_image(state).save(path, format="PNG")
    return path
