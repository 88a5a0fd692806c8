"""service/systemd.py: the user unit and tray autostart entry, with systemctl recorded, never run."""

from __future__ import annotations


from scalpel_desktop.paths import dirs
from scalpel_desktop.service.systemd import SystemdBackend, tray_icon_path
from scalpel_desktop.service.templates import UNIT_NAME
from tests.service.recorder import Recorder as _Recorder


def Recorder(fail_on: str | None = None) -> _Recorder:
    return _Recorder(fail_on, 'bus gone')


def test_enable_reloads_then_enables_now_and_writes_the_files_under_xdg_config(isolated_home):
    rec = Recorder()
    b = SystemdBackend(runner=rec)
    assert b.enable().result.name == "ENABLED"
    assert rec.calls == [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", UNIT_NAME]]
    assert b.unit_path == isolated_home / ".config" / "systemd" / "user" / UNIT_NAME
    assert b.desktop_path == isolated_home / ".config" / "autostart" / b.desktop_path.name
    assert "ExecStart=" in b.unit_path.read_text() and "tray" in b.desktop_path.read_text()
    assert tray_icon_path().is_relative_to(dirs().data) and tray_icon_path().exists()


def test_enable_stops_at_the_first_failing_command_and_names_it(isolated_home):
    rec = Recorder(fail_on="daemon-reload")
    out = SystemdBackend(runner=rec).enable()
    assert out.result.name == "FAILED" and out.message == "`systemctl --user daemon-reload` failed: bus gone"
    assert len(rec.calls) == 1


def test_disable_when_nothing_is_installed_touches_nothing(isolated_home):
    rec = Recorder()
    assert SystemdBackend(runner=rec).disable().result.name == "NOT_INSTALLED"
    assert rec.calls == []


def test_a_failing_disable_still_removes_the_files_and_says_so(isolated_home):
    b = SystemdBackend(runner=Recorder())
    b.enable()
    b.run = rec = Recorder(fail_on="disable")
    out = b.disable()
    assert out.result.name == "FAILED" and out.message.endswith("(files removed)")
    assert not b.unit_path.exists() and not b.desktop_path.exists()
    assert rec.calls[-1] == ["systemctl", "--user", "daemon-reload"]


def test_start_starts_the_unit(isolated_home):
    rec = Recorder()
    assert SystemdBackend(runner=rec).start().ok
    assert rec.calls == [["systemctl", "--user", "start", UNIT_NAME]]
    assert not SystemdBackend(runner=Recorder(fail_on="start")).start().ok
