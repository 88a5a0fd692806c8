"""The ``exclude_dirs`` setting: a conversation under one of these directories is never changed."""

from __future__ import annotations

import pytest

from scalpel_desktop.surgery.exclude import excluded


@pytest.mark.parametrize("cwd,dirs", [
    ("/home/u/secret", ["/home/u/secret"]),
    ("/home/u/secret/sub/deeper", ["/home/u/secret"]),
    ("/home/u/secret/", ["/home/u/secret"]),
    ("/home/u/secret", ["/home/u/secret/"]),
    ("/home/u/a/../secret/x", ["/home/u/secret"]),
    ("/anything", ["/"]),
    ("/srv/x", ["/tmp", "/srv"]),
])
def test_the_directory_itself_and_everything_below_it(cwd, dirs):
    assert excluded(cwd, dirs)


@pytest.mark.parametrize("cwd,dirs", [
    ("/home/u/secret-notes", ["/home/u/secret"]),  # a sibling that shares the prefix
    ("/home/u", ["/home/u/secret"]),  # above it
    ("/home/u/other", ["/home/u/secret"]),
    (None, ["/home/u"]),
    ("", ["/home/u"]),
    ("/home/u", []),
    ("/home/u", None),
])
def test_not_siblings_parents_or_an_unknown_cwd(cwd, dirs):
    assert not excluded(cwd, dirs)


def test_a_tilde_is_the_users_home(isolated_home):
    assert excluded(f"{isolated_home}/work/client", ["~/work"])
    assert excluded("~/work/client", [f"{isolated_home}/work"])
    assert not excluded(f"{isolated_home}/play", ["~/work"])
