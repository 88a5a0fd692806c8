import os
from pathlib import Path

from scalpel_desktop import paths


def test_home_relative_never_shows_the_home_path(tmp_path):
    home = Path(os.environ["HOME"])
    p = home / "x" / "y.txt"
    assert paths.home_relative(p) == "~/x/y.txt"
    assert paths.home_relative(tmp_path / "elsewhere") == str(tmp_path / "elsewhere")


def test_claude_dirs_follow_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    assert paths.claude_config_dir() == tmp_path / "cc"
    (tmp_path / "cc" / "projects").mkdir(parents=True)
    assert paths.claude_projects_dirs() == [tmp_path / "cc" / "projects"]


def test_private_dir_is_0700(tmp_path):
    d = paths.ensure_private_dir(tmp_path / "a" / "b")
    assert (os.stat(d).st_mode & 0o777) == 0o700


def test_tests_never_see_the_real_home():
    real = os.path.expanduser("~root")
    assert not os.environ["HOME"].startswith(real + "/.claude")
    assert "pytest" in os.environ["HOME"] or "tmp" in os.environ["HOME"]
