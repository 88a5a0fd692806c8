"""Regenerate the icons in assets/ from scalpel_desktop.desktop_env.icons.py.

    python assets/make_icons.py

Writes one PNG per state (128 px, as the tray draws it), plus
scalpel-desktop.ico (16-256 px) and scalpel-desktop.icns (macOS) from the
"active" image, which the standalone builds (installers/README.md) use.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from scalpel_desktop.desktop_env.icons import STATES, icon_image, save_png  # noqa: E402


def main(out: Path = HERE) -> list[Path]:
    written = [save_png(state, out / f"scalpel-{state}.png") for state in STATES]
    big = icon_image("active").resize((256, 256), resample=1)  # LANCZOS
    ico = out / "scalpel-desktop.ico"
    big.save(ico, format="ICO", sizes=[(16, 16), (24, 24), (32, 32), (48, 48), (64, 64), (128, 128), (256, 256)])
    icns = out / "scalpel-desktop.icns"
    big.resize((512, 512), resample=1).save(icns, format="ICNS")
    return [*written, ico, icns]


if __name__ == "__main__":
    for p in main():
        print(p.relative_to(HERE.parent))
