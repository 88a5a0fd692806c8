import json
import os
import stat

import pytest

from scalpel_desktop.config import KEYS, Config, ConfigError
from scalpel_desktop.paths import dirs


def test_defaults_match_spec():
    cfg = Config.load()
    assert cfg["port"] == 4242
    assert cfg["tier"] == 2
    assert cfg["policy"] == "death"
    assert cfg["keep_recent"] == 3
    assert cfg["failed_age_messages"] == 10
    assert cfg["stale_min_tokens"] == 1000
    assert cfg["stale_age_messages"] == 20
    assert cfg["min_cut_tokens"] == 200
    assert cfg["batch_min_tokens"] == 2000
    assert cfg["payback_turns_min"] == 5 and cfg["payback_turns_max"] == 50
    assert cfg["payback_factor"] == 2.0


@pytest.mark.parametrize(
    "key,value,allowed",
    [("tier", "3", "one of 1, 2"), ("port", "70000", "<= 65535"), ("policy", "warm", "cold"),
     ("paused", "maybe", "true or false"), ("anthropic_upstream", "ftp://x", "URL"), ("keep_recent", "1.5", "whole")]
    # The memory budgets, each with every way a value can be wrong.
    + [(key, value, allowed) for key in ("memo_mb", "parse_reuse_mb")
       for value, allowed in (("-1", ">= 0"), ("lots", "whole number"), ("5000", "<= 4096"), ("1.5", "whole number"))],
)
def test_bad_value_names_key_value_and_allowed(key, value, allowed):
    with pytest.raises(ConfigError) as e:
        Config.load().set(key, value)
    msg = str(e.value)
    assert key in msg and repr(value) in msg and allowed in msg


def test_unknown_key_is_refused():
    with pytest.raises(ConfigError, match="unknown setting 'tiers'"):
        Config.load().set("tiers", "1")


def test_set_save_reload_keeps_unknown_keys():
    path = dirs().config_file
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"future_key": 1}))
    cfg = Config.load()
    cfg.set("tier", "1")
    cfg.set("exclude_dirs", "/a, /b")
    cfg.save()
    raw = json.loads(path.read_text())
    assert raw == {"future_key": 1, "tier": 1, "exclude_dirs": ["/a", "/b"]}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert Config.load()["tier"] == 1


def test_broken_file_is_a_clear_error():
    path = dirs().config_file
    path.parent.mkdir(parents=True)
    path.write_text("{nope")
    with pytest.raises(ConfigError, match="config.json"):
        Config.load()


def test_every_key_has_help_and_a_valid_default():
    for key in KEYS.values():
        assert key.help
        assert key.parse(key.default) == key.default


def test_scalpel_home_overrides_every_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SCALPEL_HOME", str(tmp_path))
    d = dirs()
    for p in (d.data, d.config, d.state, d.spill, d.database, d.config_file):
        assert str(p).startswith(str(tmp_path))


def test_setting_reads_a_config_a_mapping_or_nothing_with_the_same_defaults():
    from scalpel_desktop.config import setting

    cfg = Config.load()
    cfg.set("keep_recent", "7")
    assert setting(cfg, "keep_recent") == 7
    assert setting({"keep_recent": 5}, "keep_recent") == 5
    assert setting({"keep_recent": None}, "keep_recent") == KEYS["keep_recent"].default
    assert setting({}, "tier") == setting(None, "tier") == KEYS["tier"].default == 2


def test_memory_budgets_have_documented_defaults_and_accept_zero():
    cfg = Config.load()
    assert cfg["memo_mb"] == 32 and cfg["parse_reuse_mb"] == 20
    assert cfg.set("memo_mb", "0") == 0 and cfg.set("parse_reuse_mb", 64) == 64
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[1] / "docs" / "proxy.md").read_text(encoding="utf-8")
    assert "| `memo_mb` | 32 |" in doc and "| `parse_reuse_mb` | 20 |" in doc
