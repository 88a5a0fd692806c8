"""`scalpel doctor` finds what is wrong and names the fix (cli/cmd_doctor.py, cli/doctor_checks.py)."""

from __future__ import annotations

import json

import pytest

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
    """PyGObject missing, or no tray host (stock GNOME): doctor says so, with the way to a tray."""
    import sys

    import scalpel_desktop.desktop_env.tray_host as host

    if not sys.platform.startswith("linux"):
        return
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.setattr(host, "session_bus_problem", lambda: None)
    monkeypatch.setattr(host, "sni_watcher_running", lambda: False)
    monkeypatch.setattr(host, "xembed_tray_running", lambda: True)
    for available, status, words in ((False, "warn", "pip install 'scalpel-desktop[gtk]'"), (True, "ok", "gtk backend")):
        monkeypatch.setattr(host, "gtk_available", lambda a=available: a)
        _, checks = _doctor(capsys)
        assert checks["tray"]["status"] == status and words in json.dumps(checks["tray"])
    monkeypatch.setattr(host, "xembed_tray_running", lambda: False)
    _, checks = _doctor(capsys)
    assert checks["tray"]["status"] == "warn" and "no tray host" in checks["tray"]["detail"]
    assert "AppIndicator extension" in checks["tray"]["fix"]


def _port_in_time_wait() -> int:
    """A port whose only trace is a server-side socket in TIME_WAIT (what a stopped proxy leaves)."""
    import socket

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = listener.accept()
    conn.close()  # the server closes first: its side goes to TIME_WAIT
    client.recv(1)
    client.close()
    listener.close()
    return port


def _set_port(port: int) -> None:
    from scalpel_desktop.config import Config

    cfg = Config.load()
    cfg.set("port", port)
    cfg.save()


def test_doctor_port_is_free_right_after_a_stop_despite_time_wait(isolated_home, capsys):
    import socket

    port = _port_in_time_wait()
    with socket.socket() as plain, pytest.raises(OSError):
        plain.bind(("127.0.0.1", port))  # the precondition: a plain bind would say "taken"
    _set_port(port)
    rc, checks = _doctor(capsys)
    assert checks["port"]["status"] == "ok" and "is free" in checks["port"]["detail"]
    from scalpel_desktop.runtime import Runtime

    rt = Runtime().start()  # and scalpel really starts there
    try:
        assert rt.port == port
    finally:
        rt.stop()


def test_doctor_port_taken_by_a_listener_fails(isolated_home, capsys):
    import socket

    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        _set_port(other.getsockname()[1])
        rc, checks = _doctor(capsys)
    assert rc == 1 and checks["port"]["status"] == "fail" and "taken by another program" in checks["port"]["detail"]


def test_doctor_is_loud_when_the_shell_base_url_points_at_nothing(isolated_home, capsys, monkeypatch):
    from tests.support import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", dead)
    rc, checks = _doctor(capsys)
    env = checks["environment"]
    assert rc == 1 and env["status"] == "fail"
    assert dead in env["detail"] and "Claude Code started from this shell cannot reach the API" in env["detail"]
    assert "unset ANTHROPIC_BASE_URL" in env["fix"]
    assert "wins" not in json.dumps(checks)  # settings.json sets no such value: nothing of it "wins"
    assert "direct to the API" not in checks["Claude Code"]["detail"]


def test_doctor_says_settings_wins_only_when_settings_sets_the_url(isolated_home, capsys, monkeypatch):
    from tests.support import free_port

    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": "https://gateway.example.com"}}))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{free_port()}")
    rc, checks = _doctor(capsys)
    env = checks["environment"]
    assert env["status"] == "info" and "https://gateway.example.com, which wins inside Claude Code" in env["fix"]


def _cli(*args: str):
    """``scalpel ARGS`` as its own process (as a user runs it, stdout piped)."""
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "scalpel_desktop", *args], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ))


def test_a_proxy_whose_ledger_cannot_be_used_fails_doctor_and_says_so_in_status(isolated_home):
    """Issue 26's read-only ledger folder, made so a root test run meets it too: as root, `chmod a-w`
    stops no write, so a folder sits where the ledger file should be (no one can open a folder as a
    SQLite file). A real `scalpel start` process; doctor and status read it over the control API."""
    import subprocess
    import sys

    from scalpel_desktop.paths import dirs
    from tests.support import free_port

    assert _cli("config", "set", "tool_filter", "true").returncode == 0
    dirs().database.mkdir(parents=True)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "scalpel_desktop", "start", "--port", str(port),
                             "--anthropic-upstream", "http://127.0.0.1:9"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "listening" in proc.stdout.readline()
        doctor = _cli("doctor", "--json")
        assert doctor.returncode == 1, doctor.stdout
        checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
        for name, words in (("recording", "recording is off"), ("surgery", "surgery is off"),
                            ("tool filter", "not running"), ("ledger", "cannot be read")):
            assert checks[name]["status"] == "fail" and words in checks[name]["detail"], checks[name]
        assert "is a folder" in checks["ledger"]["fix"]

        text = _cli("doctor")  # piped: one whole line per check, and no "All good."
        assert text.returncode == 1 and "All good." not in text.stdout
        assert "check(s) failed: ledger, recording, surgery, tool filter" in text.stdout
        assert any(line.startswith("[FAIL] tool filter") and "not running" in line for line in text.stdout.splitlines())

        status = json.loads(_cli("status", "--json").stdout)
        assert {"recording-off", "surgery-off", "tool-filter-off"} <= {d["code"] for d in status["degraded"]}
        assert status["saved_tokens_today"] is None
        shown = _cli("status").stdout
        assert "unknown today" in shown and "tool filter OFF (asked on)" in shown and "surgery OFF" in shown
        assert "degraded  4 failing" in shown
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_doctor_names_a_garbage_ledger_before_any_proxy_runs(isolated_home, capsys):
    from scalpel_desktop.paths import dirs

    dirs().database.parent.mkdir(parents=True)
    dirs().database.write_bytes(b"not a database, " * 512)
    rc, checks = _doctor(capsys)
    assert rc == 1 and checks["ledger"]["status"] == "fail"
    assert "not a database" in checks["ledger"]["detail"] and "mv " in checks["ledger"]["fix"]
    dirs().database.unlink()
    rc, checks = _doctor(capsys)
    assert rc == 0 and checks["ledger"]["status"] == "info"  # no ledger yet is no fault


def test_doctor_names_a_miss_cause_that_repeats_in_a_session(isolated_home, capsys):
    """Issue 24 step 3: tools changing mid-session, three times this week, is a pattern to fix."""
    import time

    from scalpel_desktop.paths import dirs
    from tests.store.test_misses import write

    now = time.time()
    dirs().database.parent.mkdir(parents=True, exist_ok=True)
    write(dirs().database, [(now - 60 * i, "5e55105e-0000", "m", "messages", 0, "tools-changed", 900, 0.01, "{}")
                            for i in range(3)] +
          [(now - 30, "5e55105e-0000", "m", "messages", 0, "ttl-expired", 900, 0.5, "{}")]).close()
    rc, checks = _doctor(capsys)
    miss = checks["cache misses"]
    assert miss["status"] == "warn" and "tools-changed 3 times in session 5e55105e" in miss["detail"]
    assert "$0.0300" in miss["detail"] and "tool filter" in miss["fix"]
