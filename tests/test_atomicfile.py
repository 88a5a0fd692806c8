import os
import stat

import pytest

from scalpel_desktop.atomicfile import write_atomic


def test_writes_with_the_mode_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "d" / "f.json"
    write_atomic(target, b"one", mode=0o600)
    write_atomic(target, b"two", mode=0o644, fsync=False)
    assert target.read_bytes() == b"two"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644
    assert os.listdir(target.parent) == ["f.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "f"
    write_atomic(target, b"old")

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f"]


def test_fsync_dir_makes_a_creation_durable_and_a_missing_folder_is_a_no_op(tmp_path):
    from scalpel_desktop.atomicfile import fsync_dir

    (tmp_path / "f").write_bytes(b"x")
    fsync_dir(tmp_path)  # (durability is not observable here: it must not raise)
    fsync_dir(tmp_path / "gone")
    assert (tmp_path / "f").read_bytes() == b"x"
