"""Which file a tool call reads or writes: only when that is unambiguous."""

from __future__ import annotations

import pytest

from scalpel_desktop.surgery.file_access import bash_read, file_access

CWD = "/home/u/proj"


@pytest.mark.parametrize("command,expected", [
    ("cat src/a.py", ("/home/u/proj/src/a.py", True)),
    ("cat /etc/hosts", ("/etc/hosts", True)),
    ("cat ./src/../README.md", ("/home/u/proj/README.md", True)),
    ("cat 'with space.txt'", ("/home/u/proj/with space.txt", True)),
    ("head -n 20 a.py", ("/home/u/proj/a.py", False)),
    ("head -20 a.py", ("/home/u/proj/a.py", False)),
    ("tail -n +5 a.py", ("/home/u/proj/a.py", False)),
    ("tail -c 100 a.py", ("/home/u/proj/a.py", False)),
    ("tail a.py", ("/home/u/proj/a.py", False)),
    ("sed -n '10,20p' a.py", ("/home/u/proj/a.py", False)),
    ("sed -n 5p a.py", ("/home/u/proj/a.py", False)),
])
def test_commands_that_plainly_print_one_file(command, expected):
    assert bash_read(command, CWD) == expected


@pytest.mark.parametrize("command", [
    "cat a.py | grep x", "cat a.py > b", "cat a.py; ls", "cat a.py && ls", "cat $F", "cat *.py", "cat a?.py",
    "cat ~/a.py", "cd src && cat a.py", "cat `ls`", "cat a.py b.py", "cat -n a.py", "cat",
    "head -f a.py", "head a.py b.py", "tail -n 5", "sed 's/a/b/' a.py", "sed -n 5,p a.py", "sed -i -n 5p a.py",
    "grep x a.py", "less a.py", "cat 'unterminated", "cat a.py\nrm -rf /", "cat {a,b}.py", "cat a[1].py",
    "x" * 501,
])
def test_anything_less_plain_is_not_a_read(command):
    assert bash_read(command, CWD) is None


def test_a_relative_path_needs_a_working_directory():
    assert bash_read("cat a.py", None) is None
    assert bash_read("cat /abs/a.py", None) == ("/abs/a.py", True)


def test_read_whole_or_partial():
    whole = file_access("Read", {"file_path": "src/a.py"}, CWD, False)
    assert (whole.path, whole.reads, whole.writes, whole.whole) == ("/home/u/proj/src/a.py", True, False, True)
    for start in (0, 1):
        assert file_access("Read", {"file_path": "/a", "offset": start}, CWD, False).whole
    part = file_access("Read", {"file_path": "/a", "offset": 100, "limit": 50}, CWD, False)
    assert not part.whole and part.range_key == (100, 50, None)
    assert not file_access("Read", {"file_path": "/a.pdf", "pages": "1-3"}, CWD, False).whole
    assert not file_access("Read", {"file_path": "/a", "limit": 10}, CWD, False).whole


def test_the_same_range_has_the_same_key_and_another_range_another():
    a = file_access("Read", {"file_path": "/a", "offset": 10, "limit": 5}, CWD, False)
    b = file_access("Read", {"file_path": "/a", "offset": 10, "limit": 5}, CWD, False)
    c = file_access("Read", {"file_path": "/a", "offset": 11, "limit": 5}, CWD, False)
    assert a.range_key == b.range_key != c.range_key


@pytest.mark.parametrize("name,key", [("Edit", "file_path"), ("Write", "file_path"), ("MultiEdit", "file_path"),
                                      ("NotebookEdit", "notebook_path")])
def test_writers(name, key):
    acc = file_access(name, {key: "nb/x.ipynb"}, CWD, False)
    assert (acc.path, acc.reads, acc.writes, acc.whole, acc.range_key) == ("/home/u/proj/nb/x.ipynb", False, True,
                                                                           False, None)


def test_bash_reads_and_a_cd_seen_earlier_forgets_the_working_directory():
    acc = file_access("Bash", {"command": "cat a.py"}, CWD, False)
    assert (acc.path, acc.reads, acc.whole, acc.range_key) == ("/home/u/proj/a.py", True, True, ("bash", "cat a.py"))
    assert file_access("Bash", {"command": "cat a.py"}, CWD, True) is None  # relative after a cd: unknown
    assert file_access("Bash", {"command": "cat /abs/a.py"}, CWD, True).path == "/abs/a.py"


@pytest.mark.parametrize("name,inp", [
    ("Read", {"file_path": 5}), ("Read", {}), ("Read", {"file_path": ""}), ("Read", {"file_path": "a\x00b"}),
    ("Read", "not a dict"), ("Edit", {"file_path": None}), ("Write", {"file_path": "rel"}),
    ("Bash", {"command": ["cat", "a"]}), ("Bash", {"command": "ls"}), ("Grep", {"pattern": "x", "path": "/a"}),
])
def test_no_access_when_the_call_does_not_say_plainly(name, inp):
    cwd = None if name == "Write" else CWD
    assert file_access(name, inp, cwd, False) is None
