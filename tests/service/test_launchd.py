"""service/launchd.py: two launch agents, launchctl recorded, never run."""

from __future__ import annotations

import os
import plistlib

from scalpel_desktop.service.launchd import PROXY_LABEL, TRAY_LABEL, LaunchdBackend
from tests.service.recorder import Recorder as _Recorder


def Recorder(fail_on: str | None = None) -> _Recorder:
    return _Recorder(fail_on, 'Bootstrap failed: 5')


def test_enable_boots_out_then_bootstraps_each_agent(isolated_home):
    rec = Recorder()
    b = LaunchdBackend(runner=rec)
    assert b.enable().result.name == "ENABLED"
    domain = f"gui/{os.getuid()}"
    agents = isolated_home / "Library" / "LaunchAgents"
    assert rec.calls == [
        ["launchctl", "bootout", f"{domain}/{PROXY_LABEL}"],
        ["launchctl", "bootstrap", domain, str(agents / f"{PROXY_LABEL}.plist")],
        ["launchctl", "bootout", f"{domain}/{TRAY_LABEL}"],
        ["launchctl", "bootstrap", domain, str(agents / f"{TRAY_LABEL}.plist")],
    ]
    proxy = plistlib.loads((agents / f"{PROXY_LABEL}.plist").read_bytes())
    tray = plistlib.loads((agents / f"{TRAY_LABEL}.plist").read_bytes())
    assert proxy["Label"] == PROXY_LABEL and proxy["ProgramArguments"][-1] == "start"
    assert tray["ProgramArguments"][-1] == "tray"


def test_a_failed_bootstrap_names_the_agent_and_stops(isolated_home):
    rec = Recorder(fail_on="bootstrap")
    out = LaunchdBackend(runner=rec).enable()
    assert out.result.name == "FAILED"
    assert out.message == f"launchctl bootstrap {PROXY_LABEL} failed: Bootstrap failed: 5"
    assert len(rec.calls) == 2


def test_disable_boots_out_both_and_removes_the_plists(isolated_home):
    b = LaunchdBackend(runner=Recorder())
    assert b.disable().result.name == "NOT_INSTALLED"
    b.enable()
    b.run = rec = Recorder()
    assert b.disable().result.name == "DISABLED"
    assert [c[1] for c in rec.calls] == ["bootout", "bootout"]
    assert not any(p.exists() for p in b.files())


def test_start_kickstarts_the_proxy_agent(isolated_home):
    rec = Recorder()
    assert LaunchdBackend(runner=rec).start().ok
    assert rec.calls == [["launchctl", "kickstart", f"gui/{os.getuid()}/{PROXY_LABEL}"]]
