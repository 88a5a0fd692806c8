"""service/windows.py: two Task Scheduler logon tasks from UTF-16 XML, schtasks recorded, never run."""

from __future__ import annotations


from scalpel_desktop.paths import dirs
from scalpel_desktop.service import windows
from scalpel_desktop.service.windows import PROXY_TASK, TRAY_TASK, WindowsBackend
from tests.service.recorder import Recorder as _Recorder


def Recorder(fail_on: str | None = None) -> _Recorder:
    return _Recorder(fail_on, 'Access is denied.')


def test_enable_creates_both_tasks_from_utf16_xml_then_runs_the_proxy(isolated_home):
    rec = Recorder()
    b = WindowsBackend(runner=rec)
    assert b.enable().ok
    xml = dirs().config / "tasks" / f"{PROXY_TASK}.xml"
    assert rec.calls == [
        ["schtasks", "/Create", "/F", "/TN", PROXY_TASK, "/XML", str(xml)],
        ["schtasks", "/Create", "/F", "/TN", TRAY_TASK, "/XML", str(dirs().config / "tasks" / f"{TRAY_TASK}.xml")],
        ["schtasks", "/Run", "/TN", PROXY_TASK],
    ]
    raw = xml.read_bytes()
    assert raw[:2] in (b"\xff\xfe", b"\xfe\xff")  # UTF-16 with a BOM, as schtasks wants
    assert "scalpel-desktop proxy at logon" in raw.decode("utf-16")


def test_a_failing_create_names_the_task(isolated_home):
    out = WindowsBackend(runner=Recorder(fail_on="/Create")).enable()
    assert out.result.name == "FAILED" and out.message == f"schtasks /Create {PROXY_TASK} failed: Access is denied."


def test_disable_ends_and_deletes_both_tasks(isolated_home):
    b = WindowsBackend(runner=Recorder())
    assert b.disable().result.name == "NOT_INSTALLED"
    b.enable()
    b.run = rec = Recorder()
    assert b.disable().result.name == "DISABLED"
    assert [c[1] for c in rec.calls] == ["/End", "/Delete", "/End", "/Delete"]
    assert not any(p.exists() for p in b.files())


def test_the_task_user_includes_the_domain_when_there_is_one(monkeypatch):
    monkeypatch.setattr(windows.getpass, "getuser", lambda: "ada")
    monkeypatch.setenv("USERDOMAIN", "LAB")
    assert windows._user_id() == "LAB\\ada"
    monkeypatch.delenv("USERDOMAIN")
    assert windows._user_id() == "ada"
