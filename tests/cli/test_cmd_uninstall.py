"""`scalpel uninstall` restores every file it changed."""

from __future__ import annotations

from scalpel_desktop.cli import main
from scalpel_desktop.service import autopilot, hooks
from scalpel_desktop.service.settings_file import settings_path

ORIGINAL = b'{\n\t"model": "haiku",\n\t"statusLine": {"type": "command", "command": "mine"}\n}'


def test_uninstall_restores_settings_byte_for_byte_and_keeps_data(isolated_home, capsys, process_service):
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.service.process_backend import ProcessBackend

    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(ORIGINAL)
    autopilot.on(timeout=30)
    hooks.install_hooks()
    hooks.install_statusline()
    assert path.read_bytes() != ORIGINAL
    backup = path.with_name("settings.json.scalpel-backup")
    assert backup.exists()
    assert main(["uninstall", "--yes"]) == 0
    assert path.read_bytes() == ORIGINAL
    assert ProcessBackend().pid() is None and not autopilot.is_on()
    assert dirs().config.exists()
    out = capsys.readouterr().out
    assert "kept scalpel's data" in out
    assert not backup.exists() and "removed the backup ~/.claude/settings.json.scalpel-backup" in out


def test_uninstall_keeps_the_backup_while_a_change_is_left_to_restore(isolated_home, capsys):
    """An unparsable settings.json stops the restore: the backup stays, it may be all the user has."""
    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(ORIGINAL)
    hooks.install_hooks()
    backup = path.with_name("settings.json.scalpel-backup")
    path.write_bytes(b'{"hooks": ')
    assert main(["uninstall", "--yes"]) == 1
    assert backup.read_bytes() == ORIGINAL


def test_uninstall_delete_data(isolated_home, capsys):
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.store.db import connect

    connect().close()
    assert dirs().database.exists()
    assert main(["uninstall", "--yes", "--delete-data"]) == 0
    assert not dirs().data.exists()


def test_uninstall_without_confirmation_changes_nothing(isolated_home, capsys):
    hooks.install_hooks()
    before = settings_path().read_bytes()
    assert main(["uninstall"]) == 1  # stdin is not a terminal under pytest
    assert settings_path().read_bytes() == before


def test_uninstall_on_a_clean_machine_says_so_and_creates_nothing(isolated_home, capsys, process_service):
    """Regression: it printed "hooks removed" and left a settings.json holding ``{}`` behind."""
    assert main(["uninstall", "--yes"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["no autopilot, hooks or statusLine were installed",
                       "Claude Code settings: ~/.claude/settings.json"]
    assert not settings_path().exists() and not settings_path().parent.exists()


def test_uninstall_stops_at_an_unparsable_settings_file_and_says_what_is_kept(isolated_home, capsys):
    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"statusLine": ')
    assert main(["uninstall", "--yes"]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and "(uninstall stopped; nothing else was changed)" in err
    assert path.read_bytes() == b'{"statusLine": '
