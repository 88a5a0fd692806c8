"""The backend chooser: one backend per OS, the test backend on request, and the base never imports a backend."""

from __future__ import annotations

import ast
import inspect

from scalpel_desktop.service import autostart, base
from scalpel_desktop.service.launchd import LaunchdBackend
from scalpel_desktop.service.process_backend import ProcessBackend
from scalpel_desktop.service.systemd import SystemdBackend
from scalpel_desktop.service.windows import WindowsBackend


def test_each_platform_gets_its_backend(monkeypatch):
    monkeypatch.delenv(autostart.TEST_BACKEND_ENV, raising=False)
    for platform, cls in (("linux", SystemdBackend), ("darwin", LaunchdBackend), ("win32", WindowsBackend)):
        monkeypatch.setattr(autostart.sys, "platform", platform)
        assert type(autostart.choose_backend()) is cls, platform


def test_the_test_setting_selects_the_process_backend(monkeypatch):
    monkeypatch.setenv(autostart.TEST_BACKEND_ENV, "process")
    monkeypatch.setattr(autostart.sys, "platform", "darwin")
    assert type(autostart.choose_backend()) is ProcessBackend


def test_the_runner_reaches_the_backend(monkeypatch):
    monkeypatch.delenv(autostart.TEST_BACKEND_ENV, raising=False)
    monkeypatch.setattr(autostart.sys, "platform", "linux")

    def runner(argv):
        raise AssertionError("not called")

    assert autostart.choose_backend(runner).run is runner


def test_the_base_module_imports_no_backend():
    tree = ast.parse(inspect.getsource(base))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m.startswith("scalpel_desktop.service")}, imported
