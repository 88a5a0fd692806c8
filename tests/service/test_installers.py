"""The packaging files: the PyInstaller spec compiles and points at real files; assets match the code."""

from __future__ import annotations

import re

from PIL import Image

from tests.support import REPO


def test_pyinstaller_spec_compiles_and_names_existing_files():
    spec = (REPO / "installers" / "scalpel-desktop.spec").read_text()
    compile(spec, "scalpel-desktop.spec", "exec")
    assert (REPO / "installers" / "scalpel_entry.py").exists()
    for name in re.findall(r'"(scalpel-desktop\.(?:ico|icns))"', spec):
        assert (REPO / "assets" / name).exists(), name


def test_assets_are_the_icons_the_tray_draws(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_icons", REPO / "assets" / "make_icons.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    written = mod.main(tmp_path)
    for path in written:
        if path.suffix == ".png":
            committed = Image.open(REPO / "assets" / path.name)
            assert committed.tobytes() == Image.open(path).tobytes(), f"assets/{path.name} is stale: run assets/make_icons.py"
    ico = Image.open(REPO / "assets" / "scalpel-desktop.ico")
    assert (256, 256) in ico.info["sizes"] and (16, 16) in ico.info["sizes"]
    assert Image.open(REPO / "assets" / "scalpel-desktop.icns").format == "ICNS"
