"""``scalpel`` with no command and ``scalpel tray``: the tray, or the proxy headless with a word on why."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from scalpel_desktop.cli import main
from tests.support import free_port

SCALPEL = [sys.executable, "-m", "scalpel_desktop"]


@pytest.fixture
def no_tray(monkeypatch):
    from scalpel_desktop.tray import backend

    monkeypatch.setattr(backend, "choose", lambda: backend.BackendChoice(None, "none", "no tray host here", "add one"))


def test_no_tray_and_a_proxy_already_running_says_so_and_does_nothing(isolated_home, no_tray, capsys):
    from scalpel_desktop.runtime import Runtime

    rt = Runtime(port=0).start()
    try:
        assert main(["tray"]) == 0
        err = capsys.readouterr().err
        assert err == (f"scalpel: no tray: no tray host here. A proxy already runs on http://127.0.0.1:{rt.port}; "
                       "nothing to do. For the tray: add one.\n")
        assert rt.running
    finally:
        rt.stop()


def test_a_tray_that_cannot_start_its_proxy_is_a_one_line_cli_error(isolated_home, monkeypatch, capsys):
    from scalpel_desktop.tray import app as tray_app

    def refuse():
        raise tray_app.TrayStartError("cannot start the proxy for the tray: port 4242 is taken")

    monkeypatch.setattr(tray_app, "run_tray", refuse)
    assert main(["tray"]) == 1
    assert capsys.readouterr().err == "scalpel: cannot start the proxy for the tray: port 4242 is taken\n"


def test_no_command_and_no_display_serves_in_the_foreground(isolated_home):
    from scalpel_desktop.paths import dirs

    port = free_port()
    dirs().config.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text(json.dumps({"port": port}))
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.Popen(SCALPEL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert f"listening on http://127.0.0.1:{port}" in proc.stdout.readline()
        said = proc.stderr.readline()  # why the proxy runs in the foreground, once it does
        assert said == (f"scalpel: no tray: no display (DISPLAY/WAYLAND_DISPLAY unset). The proxy runs in the "
                        f"foreground on http://127.0.0.1:{port} (Ctrl-C stops it). For the tray: start `scalpel tray` "
                        "inside a desktop session.\n")
        stop = subprocess.run(SCALPEL + ["stop"], capture_output=True, text=True, env=env, timeout=30)
        assert stop.returncode == 0, stop.stderr
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
