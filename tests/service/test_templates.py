"""Every platform's login-service files, rendered and validated by each format's own checker."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from scalpel_desktop.service import templates
from scalpel_desktop.service.launchd import LaunchdBackend
from scalpel_desktop.service.systemd import SystemdBackend
from scalpel_desktop.service.windows import WindowsBackend
from tests.service.recorder import Recorder
from tests.support import require


def test_systemd_unit_passes_systemd_analyze_verify(isolated_home, tmp_path):
    require(shutil.which("systemd-analyze") is not None, "systemd-analyze (Debian package systemd)")
    unit = tmp_path / templates.UNIT_NAME
    unit.write_text(templates.render_systemd_unit(templates.python_launch("start")))
    cp = subprocess.run(["systemd-analyze", "--user", "verify", "--man=no", str(unit)],
                        capture_output=True, text=True, env={**os.environ}, timeout=60)
    assert cp.returncode == 0 and not cp.stdout.strip() and not cp.stderr.strip(), cp.stdout + cp.stderr
    text = unit.read_text()
    assert f"Environment=SCALPEL_HOME={os.environ['SCALPEL_HOME']}" in text
    assert "ExecStart=" in text and "-m scalpel_desktop start" in text
    # Autopilot's proxy comes back after any exit, and systemd never gives up on it.
    assert "\nRestart=always\n" in text and "\nStartLimitIntervalSec=0\n" in text


def test_the_service_managers_wait_for_the_stop_far_longer_than_it_needs():
    """Issue 25: systemd's TimeoutStopSec=10 met an 11 s stop, and its SIGKILL lost rows. The proxy
    stops within ``runtime_stop.STOP_TIMEOUT_S``; both managers wait several times that."""
    from scalpel_desktop.runtime_stop import STOP_TIMEOUT_S

    unit = templates.render_systemd_unit(templates.python_launch("start"))
    (line,) = [x for x in unit.splitlines() if x.startswith("TimeoutStopSec=")]
    assert int(line.split("=", 1)[1]) == templates.STOP_TIMEOUT_S >= 3 * STOP_TIMEOUT_S
    assert "@STOP_TIMEOUT@" not in unit
    plist = plistlib.loads(templates.render_launchd_plist("x", templates.python_launch("start"), "/tmp/log"))
    assert plist["ExitTimeOut"] == templates.STOP_TIMEOUT_S


def test_systemd_analyze_verify_speaks_up_on_a_bad_unit(isolated_home, tmp_path):
    """The check above fails on any output: show that a planted mistake produces some."""
    require(shutil.which("systemd-analyze") is not None, "systemd-analyze (Debian package systemd)")
    unit = tmp_path / templates.UNIT_NAME
    unit.write_text(templates.render_systemd_unit(templates.python_launch("start")).replace("Restart=always", "Restart=sometimes"))
    cp = subprocess.run(["systemd-analyze", "--user", "verify", "--man=no", str(unit)],
                        capture_output=True, text=True, env={**os.environ}, timeout=60)
    assert "sometimes" in cp.stdout + cp.stderr


def test_systemd_unit_quotes_paths_with_spaces():
    launch = templates.Launch("/opt/my apps/python3", ("-m", "scalpel_desktop", "start"), {"SCALPEL_HOME": "/x y/%h"})
    text = templates.render_systemd_unit(launch)
    assert 'ExecStart="/opt/my apps/python3" -m scalpel_desktop start' in text
    assert 'Environment="SCALPEL_HOME=/x y/%%h"' in text


def test_desktop_entry_passes_desktop_file_validate(isolated_home, tmp_path):
    require(shutil.which("desktop-file-validate") is not None, "desktop-file-validate (desktop-file-utils)")
    launch = templates.Launch("/opt/my apps/python3", ("-m", "scalpel_desktop", "tray"), {"SCALPEL_HOME": "/a b"})
    entry = tmp_path / templates.DESKTOP_NAME
    entry.write_text(templates.render_desktop_entry(launch, "/tmp/icon.png"))
    cp = subprocess.run(["desktop-file-validate", str(entry)], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0 and not cp.stdout.strip(), cp.stdout + cp.stderr
    assert 'Exec=env "SCALPEL_HOME=/a b" "/opt/my apps/python3" -m scalpel_desktop tray' in entry.read_text()


def test_desktop_file_validate_catches_a_bad_entry(tmp_path):
    require(shutil.which("desktop-file-validate") is not None, "desktop-file-validate (desktop-file-utils)")
    bad = tmp_path / "bad.desktop"
    bad.write_text("[Desktop Entry]\nType=Application\nExec=x\n")  # Name missing
    assert subprocess.run(["desktop-file-validate", str(bad)], capture_output=True).returncode == 1


def test_launchd_plists_parse_with_the_right_keys(isolated_home):
    files = LaunchdBackend().files()
    assert len(files) == 2
    for path, data in files.items():
        doc = plistlib.loads(data)
        assert path.name == f"{doc['Label']}.plist"
        assert isinstance(doc["ProgramArguments"], list) and all(isinstance(a, str) for a in doc["ProgramArguments"])
        assert doc["ProgramArguments"][1:3] == ["-m", "scalpel_desktop"]
        # The proxy comes back after any exit; the tray only after a crash (Quit means quit).
        keep_alive = True if doc["ProgramArguments"][-1] == "start" else {"SuccessfulExit": False}
        assert doc["RunAtLoad"] is True and doc["KeepAlive"] == keep_alive
        assert doc["EnvironmentVariables"]["SCALPEL_HOME"] == os.environ["SCALPEL_HOME"]
        assert isinstance(doc["StandardErrorPath"], str)
    assert {plistlib.loads(d)["ProgramArguments"][-1] for d in files.values()} == {"start", "tray"}


def test_windows_task_xml_parses(isolated_home):
    ns = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}
    files = WindowsBackend().files()
    assert len(files) == 2
    for data in files.values():
        assert data[:2] in (b"\xff\xfe", b"\xfe\xff")  # UTF-16 with a BOM, as schtasks wants
        root = ET.fromstring(data.decode("utf-16").replace('encoding="UTF-16"', ""))
        assert root.find("t:Triggers/t:LogonTrigger/t:Enabled", ns).text == "true"
        command = root.find("t:Actions/t:Exec/t:Command", ns).text
        args = root.find("t:Actions/t:Exec/t:Arguments", ns).text
        assert command and args.startswith("-m scalpel_desktop ")
        assert root.find("t:Settings/t:ExecutionTimeLimit", ns).text == "PT0S"
        assert root.find("t:Settings/t:MultipleInstancesPolicy", ns).text == "IgnoreNew"
        repeat = root.find("t:Triggers/t:LogonTrigger/t:Repetition/t:Interval", ns)
        if args.endswith(" start"):  # the proxy: re-run every minute, a no-op while it runs
            assert repeat is not None and repeat.text == "PT1M"
        else:  # the tray: Quit means quit
            assert repeat is None


def test_windows_task_escapes_xml_characters():
    text = templates.render_windows_task("t", "a <b> & c", templates.Launch("C:\\P&Q\\python.exe", ("-m", "x y")), "DOM\\me")
    root = ET.fromstring(text.replace('encoding="UTF-16"', ""))
    ns = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}
    assert root.find("t:RegistrationInfo/t:Description", ns).text == "a <b> & c"
    assert root.find("t:Actions/t:Exec/t:Arguments", ns).text == '-m "x y"'


def test_systemd_backend_installs_into_the_temp_home_only(isolated_home):
    rec = Recorder()
    backend = SystemdBackend(runner=rec)
    out = backend.enable()
    assert out.ok, out.message
    assert backend.unit_path.is_relative_to(isolated_home) and backend.unit_path.exists()
    assert backend.desktop_path.is_relative_to(isolated_home) and backend.desktop_path.exists()
    assert backend.enabled()
    assert ["systemctl", "--user", "enable", "--now", templates.UNIT_NAME] in rec.calls
    out = backend.disable()
    assert out.ok and not backend.unit_path.exists() and not backend.desktop_path.exists()
    assert ["systemctl", "--user", "disable", "--now", templates.UNIT_NAME] in rec.calls


def test_systemd_backend_reports_a_failing_systemctl(isolated_home):
    def failing(argv):
        return subprocess.CompletedProcess(argv, 1, "", "Failed to connect to bus")

    out = SystemdBackend(runner=failing).enable()
    assert not out.ok and "Failed to connect to bus" in out.message


@pytest.mark.parametrize("backend_cls", [LaunchdBackend, WindowsBackend])
def test_other_backends_install_and_remove_files_with_recorded_commands(isolated_home, backend_cls):
    rec = Recorder()
    b = backend_cls(runner=rec)
    assert b.enable().ok and b.enabled()
    assert all(p.is_relative_to(isolated_home.parent) for p in b.files())
    assert b.disable().ok and not b.enabled()
    assert rec.calls
