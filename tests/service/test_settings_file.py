"""Claude Code settings edits: atomic, backed up, refused when unparsable, undone byte for byte."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings as hsettings, strategies as st

from scalpel_desktop.service.settings_file import ClaudeSettings, SettingsError, get_path, object_at

ORIGINAL = b'{\n    "model": "opus",\n    "env": {"FOO": "b\\u00e4r"},\n    "permissions": {"allow": []}\n}'


def _set_url(doc):
    replaced = {("env", "ANTHROPIC_BASE_URL"): get_path(doc, ("env", "ANTHROPIC_BASE_URL"), ClaudeSettings.MISSING)}
    object_at(doc, "env", replaced)["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:4242"
    return replaced


def test_apply_then_restore_gives_the_bytes_back(isolated_home):
    s = ClaudeSettings()
    s.path.parent.mkdir(parents=True)
    s.path.write_bytes(ORIGINAL)
    s.apply("autopilot", _set_url)
    assert json.loads(s.path.read_bytes())["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:4242"
    assert s.path.with_name("settings.json.scalpel-backup").read_bytes() == ORIGINAL
    assert s.restore("autopilot")
    assert s.path.read_bytes() == ORIGINAL


def test_missing_file_is_removed_again(isolated_home):
    s = ClaudeSettings()
    s.apply("autopilot", _set_url)
    assert s.path.exists()
    s.restore("autopilot")
    assert not s.path.exists()


def test_restoring_what_was_never_applied_creates_no_file(isolated_home):
    """Regression: an uninstall on a machine without settings.json wrote one holding ``{}``."""
    s = ClaudeSettings()
    assert s.restore("hooks", lambda doc: doc.pop("hooks", None)) is False
    assert not s.path.exists() and not s.path.parent.exists()
    assert not s.records_path.exists()


def test_user_edits_in_between_are_kept(isolated_home):
    s = ClaudeSettings()
    s.path.parent.mkdir(parents=True)
    s.path.write_bytes(ORIGINAL)
    s.apply("autopilot", _set_url)
    doc = json.loads(s.path.read_bytes())
    doc["theme"] = "dark"
    s.path.write_text(json.dumps(doc))
    s.restore("autopilot")
    after = json.loads(s.path.read_bytes())
    assert after["theme"] == "dark"
    assert "ANTHROPIC_BASE_URL" not in after["env"]
    assert after["env"] == {"FOO": "bär"}


def test_previous_value_is_restored_even_after_two_applies(isolated_home):
    s = ClaudeSettings()
    s.path.parent.mkdir(parents=True)
    s.path.write_text('{"env": {"ANTHROPIC_BASE_URL": "https://gw.example"}}')
    s.apply("autopilot", _set_url)
    s.apply("autopilot", _set_url)
    s.restore("autopilot")
    assert json.loads(s.path.read_text())["env"]["ANTHROPIC_BASE_URL"] == "https://gw.example"


def _set_statusline(doc):
    prev = doc.get("statusLine", ClaudeSettings.MISSING)
    doc["statusLine"] = {"type": "command", "command": "x"}
    return {("statusLine",): prev}


@pytest.mark.parametrize("bad", [b'{"env": {', b"[1, 2]", b"\xff\xfe{}"])
def test_unparsable_file_is_refused_and_untouched(isolated_home, bad):
    s = ClaudeSettings()
    s.path.parent.mkdir(parents=True)
    s.path.write_bytes(bad)
    with pytest.raises(SettingsError) as e:
        s.apply("autopilot", _set_url)
    assert str(s.path) in str(e.value)
    assert s.path.read_bytes() == bad
    assert not s.path.with_name("settings.json.scalpel-backup").exists()


def test_parse_error_names_line_and_column(isolated_home):
    s = ClaudeSettings()
    s.path.parent.mkdir(parents=True)
    s.path.write_text('{\n  "a": 1,\n  "b": \n}')
    with pytest.raises(SettingsError, match=r"line 4 column 1"):
        s.load()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)


@example(doc={"env": {}}, indent=None)  # regression: the user's empty "env" was pruned with scalpel's key
@example(doc={"env": None}, indent=2)  # regression: a null "env" came back as {} (or not at all)
@example(doc={"env": "x", "statusLine": None}, indent=None)
@hsettings(max_examples=40, deadline=None)
@given(doc=st.dictionaries(st.text(max_size=8), json_values, max_size=5), indent=st.sampled_from([None, 2, 4, "\t"]))
def test_round_trip_is_byte_exact_for_any_settings(tmp_path_factory, doc, indent):
    d = tmp_path_factory.mktemp("s")
    s = ClaudeSettings(d / "settings.json", d / "records.json")
    raw = json.dumps(doc, indent=indent).encode()
    s.path.write_bytes(raw)
    s.apply("autopilot", _set_url)
    s.apply("statusline", _set_statusline)
    s.restore("autopilot")
    s.restore("statusline")
    assert s.path.read_bytes() == raw


def test_a_replaced_non_object_comes_back_only_when_nothing_of_the_users_is_in_it(isolated_home):
    """``"env": null`` is replaced by an object to hold scalpel's key, and put back when that key
    goes; but a key the user added to that object meanwhile keeps the object (theirs now)."""
    s = ClaudeSettings()
    s.path.parent.mkdir(parents=True)
    raw = b'{"env": null, "model": "opus"}'
    s.path.write_bytes(raw)
    s.apply("autopilot", _set_url)
    assert json.loads(s.path.read_bytes())["env"] == {"ANTHROPIC_BASE_URL": "http://127.0.0.1:4242"}
    assert s.restore("autopilot") and s.path.read_bytes() == raw
    s.apply("autopilot", _set_url)
    doc = json.loads(s.path.read_bytes())
    doc["env"]["FOO"] = "1"  # the user's own, added while autopilot was on
    s.path.write_text(json.dumps(doc))
    s.restore("autopilot")
    assert json.loads(s.path.read_bytes())["env"] == {"FOO": "1"}
