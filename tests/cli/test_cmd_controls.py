"""``scalpel tier`` and ``scalpel policy``: through the running proxy when one runs, else the file."""

from __future__ import annotations

import json

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.config import Config


def test_policy_without_a_proxy_goes_to_the_config_file(capsys):
    assert main(["policy", "payback"]) == 0
    out = capsys.readouterr().out
    assert "policy: \"death\" -> \"payback\"" in out and "no proxy running" in out
    assert Config.load().get("policy") == "payback"
    assert main(["policy", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == "payback"


def test_tier_json_and_unchanged(capsys):
    assert main(["tier", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["before"] == 2 and data["value"] == 1 and data["changed"] and data["live"] is False
    assert main(["tier", "1"]) == 0
    assert "unchanged" in capsys.readouterr().out


def test_bad_values_are_refused_by_argparse(capsys):
    with pytest.raises(SystemExit):
        main(["policy", "sometimes"])
    with pytest.raises(SystemExit):
        main(["tier", "3"])


def test_policy_through_the_running_proxy(capsys):
    from scalpel_desktop.runtime import Runtime

    rt = Runtime(Config.load(), {"anthropic_upstream": "http://127.0.0.1:9"}, port=0).start()
    try:
        assert main(["policy", "off"]) == 0
        out = capsys.readouterr().out
        assert "applied live by the running proxy" in out
        assert rt.setting("policy") == "off"  # live, without a restart
        assert Config.load().get("policy") == "off"  # and saved
    finally:
        rt.stop()


def test_config_set_goes_through_the_running_proxy(capsys):
    """Like `scalpel tier`: the proxy applies and saves it, so its next save cannot undo it."""
    from scalpel_desktop.cli import main
    from scalpel_desktop.config import Config
    from scalpel_desktop.runtime import Runtime

    rt = Runtime(port=0).start()
    try:
        assert main(["config", "set", "keep_recent", "7"]) == 0
        assert "applied live by the running proxy" in capsys.readouterr().out
        assert rt.setting("keep_recent") == 7
        rt.set_settings({"tier": 1})  # the proxy rewrites the file from its own copy
        assert Config.load()["keep_recent"] == 7
    finally:
        rt.stop()
    assert main(["config", "set", "keep_recent", "4"]) == 0
    assert "no proxy running" in capsys.readouterr().out
    assert Config.load()["keep_recent"] == 4
