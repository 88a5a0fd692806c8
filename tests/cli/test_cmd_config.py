"""``scalpel config show|path|set`` without a proxy: the config file under the test's SCALPEL_HOME."""

from __future__ import annotations

import json

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.config import KEYS
from scalpel_desktop.paths import dirs
from tests.support import run_cli as run


def test_show_json_is_every_default_before_anything_is_set(capsys):
    code, out, _ = run(capsys, "config", "show", "--json")
    assert code == 0
    assert json.loads(out) == {k: v.default for k, v in KEYS.items()}
    assert not dirs().config_file.exists()  # showing writes nothing


def test_show_text_is_one_aligned_line_per_setting_with_its_help(capsys):
    code, out, _ = run(capsys, "config", "show")
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(KEYS)
    width = max(len(k) for k in KEYS)
    assert f"{'policy':<{width}}  \"{KEYS['policy'].default}\"    # {KEYS['policy'].help}" in lines
    assert f"{'exclude_dirs':<{width}}  []    # {KEYS['exclude_dirs'].help}" in lines


def test_path_prints_the_config_file(capsys):
    code, out, _ = run(capsys, "config", "path")
    assert code == 0 and out == f"{dirs().config_file}\n"
    assert str(dirs().config_file).startswith(str(dirs().config))


def test_set_validates_saves_and_show_reads_it_back(capsys):
    code, out, _ = run(capsys, "config", "set", "keep_recent", "7")
    assert code == 0
    assert out == f"keep_recent = 7    (saved to {dirs().config_file}; no proxy running)\n"
    code, out, _ = run(capsys, "config", "set", "exclude_dirs", "/a,/b c")
    assert code == 0 and out.startswith('exclude_dirs = ["/a", "/b c"]')
    shown = json.loads(run(capsys, "config", "show", "--json")[1])
    assert shown["keep_recent"] == 7 and shown["exclude_dirs"] == ["/a", "/b c"]
    assert json.loads(dirs().config_file.read_text()) == {"keep_recent": 7, "exclude_dirs": ["/a", "/b c"]}


@pytest.mark.parametrize(("value", "saved"), [
    ("[]", []), ("", []), ("  [ ] ", []), ('["/a", "/b, c"]', ["/a", "/b, c"]), ("/a, /b", ["/a", "/b"]),
])
def test_a_list_setting_takes_a_json_list_or_commas_and_empty_is_none(capsys, value, saved):
    """``config show`` prints ``exclude_dirs  []``: pasting that back must not save a folder named ``[]``."""
    code, out, _ = run(capsys, "config", "set", "exclude_dirs", value)
    assert code == 0 and out.startswith(f"exclude_dirs = {json.dumps(saved)}")
    assert json.loads(dirs().config_file.read_text())["exclude_dirs"] == saved


@pytest.mark.parametrize(("key", "value", "message"), [
    ("exclude_dirs", "[1, 2]", "exclude_dirs: '[1, 2]' is not valid; allowed: a comma-separated list or a JSON"),
    ("exclude_dirs", "[/a", "exclude_dirs: '[/a' is not valid; allowed:"),
    ("tier", "3", "tier: '3' is not valid; allowed:"),
    ("port", "http", "port: 'http' is not valid; allowed:"),
    ("anthropic_upstream", "ftp://x", "anthropic_upstream: 'ftp://x' is not valid; allowed: an http:// or https:// URL"),
    ("colour", "blue", "unknown setting 'colour'; known: "),
])
def test_a_bad_key_or_value_exits_1_names_it_and_writes_nothing(capsys, key, value, message):
    code, out, err = run(capsys, "config", "set", key, value)
    assert code == 1 and out == ""
    assert message in err and err.count("\n") == 1
    assert not dirs().config_file.exists()


def test_an_unparsable_config_file_is_named_and_left_alone(capsys):
    path = dirs().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    for argv in (["config", "show"], ["config", "set", "tier", "1"]):
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == ""
        assert f"{path}: cannot be read as JSON" in err
    assert path.read_text() == "{not json"


def test_missing_action_or_value_is_argparses_exit_2(capsys):
    for argv in (["config"], ["config", "set", "tier"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2 and "required" in capsys.readouterr().err


def test_show_on_an_80_column_terminal_wraps_each_help_under_its_setting():
    """A real process in an 80-column pseudo-terminal: no line wider, every help whole once rejoined."""
    from tests.cli.test_tables_fit import in_terminal, piped

    out = in_terminal("config", "show")
    lines = out.splitlines()
    assert lines and max(len(line) for line in lines) <= 80
    width = max(len(k) for k in KEYS)
    helps: dict[str, list[str]] = {}
    key = None
    for line in lines:
        if line[:width].strip():
            key = line[:width].strip()
            helps[key] = [line.split("    # ", 1)[1]] if "    # " in line else []
        else:
            assert line.startswith(" " * (width + 2) + "# ") and key is not None
            helps[key].append(line[width + 4:])
    assert {k: " ".join(parts) for k, parts in helps.items()} == {k: v.help for k, v in KEYS.items()}
    assert any(len(parts) > 1 for parts in helps.values())  # some did wrap
    whole = piped("config", "show").stdout.splitlines()  # piped: one whole line per setting
    assert len(whole) == len(KEYS) and max(len(line) for line in whole) > 80
