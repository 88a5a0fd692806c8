"""`scalpel doctor` finds what is wrong and names the fix (cli/cmd_doctor.py, cli/doctor_checks.py)."""

from __future__ import annotations

import json

from scalpel_desktop.cli import main
from scalpel_desktop.service import autopilot, hooks
from scalpel_desktop.service.settings_file import settings_path


def _doctor(capsys) -> tuple[int, dict]:
    rc = main(["doctor", "--json"])
    return rc, {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}


def test_doctor_on_a_fresh_install(isolated_home, capsys):
    rc, checks = _doctor(capsys)
    assert rc == 0
    assert checks["Claude Code"]["status"] == "info" and checks["hooks"]["status"] == "info"
    assert checks["port"]["status"] == "ok"


def test_doctor_flags_unparsable_settings_and_a_dead_base_url(isolated_home, capsys, process_service):
    port = process_service
    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_text("{nope")
    rc, checks = _doctor(capsys)
    assert rc == 1 and checks["Claude Code"]["status"] == "fail" and "settings.json" in checks["Claude Code"]["detail"]
    path.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}}))
    rc, checks = _doctor(capsys)
    assert rc == 1 and "nothing answers" in checks["Claude Code"]["detail"]
    assert "autopilot" in checks["Claude Code"]["fix"]


def test_doctor_all_green_with_autopilot_and_hooks(isolated_home, capsys, process_service):
    autopilot.on(timeout=30)
    hooks.install_hooks()
    rc, checks = _doctor(capsys)
    assert rc == 0, checks
    assert checks["proxy"]["status"] == "ok" and checks["Claude Code"]["status"] == "ok"
    assert checks["login service"]["status"] == "ok" and checks["hooks"]["status"] == "ok"
    autopilot.off()


def test_doctor_finds_a_proxy_started_by_hand_on_another_port(isolated_home, capsys):
    from scalpel_desktop.runtime import Runtime

    rt = Runtime(port=0).start()
    try:
        rc, checks = _doctor(capsys)
        assert checks["proxy"]["status"] == "ok"
        assert f":{rt.port}" in checks["proxy"]["detail"] or str(rt.port) in json.dumps(checks["proxy"])
    finally:
        rt.stop()


def test_doctor_reports_the_tray_as_the_tray_itself_would_choose(isolated_home, capsys, monkeypatch):
    """PyGObject without the GTK 3 typelib leaves the tray without a menu: doctor must say so."""
    import sys

    import scalpel_desktop.desktop_env.tray_host as backend

    if not sys.platform.startswith("linux"):
        return
    for available, status in ((False, "warn"), (True, "ok")):
        monkeypatch.setattr(backend, "gtk_available", lambda a=available: a)
        _, checks = _doctor(capsys)
        assert checks["tray"]["status"] == status
