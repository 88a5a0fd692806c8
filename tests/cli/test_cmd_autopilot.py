"""``scalpel autopilot on|off|status`` through ``cli.main``, on the TEST service backend (a real child)."""

from __future__ import annotations

import json

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.service.settings_file import settings_path
from tests.support import run_cli as run

GATEWAY = b'{"env": {"ANTHROPIC_BASE_URL": "https://llm-gateway.example.com/anthropic"}}'


def write_settings(data: bytes):
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_status_when_off_text_and_json(process_service, capsys):
    port = process_service
    code, out, _ = run(capsys, "autopilot", "status", "--json")
    assert code == 0
    st = json.loads(out)
    assert (st["enabled"], st["service_installed"], st["proxy_answering"]) == (False, False, False)
    assert (st["backend"], st["port"], st["settings_base_url"], st["problems"]) == ("test-process", port, None, [])
    code, out, _ = run(capsys, "autopilot", "status")
    assert code == 0
    assert out.splitlines()[:3] == ["autopilot:        off", "login service:    not installed (test-process)",
                                    f"proxy:            not answering on 127.0.0.1:{port}"]
    assert "ANTHROPIC_BASE_URL = (not set: Claude Code talks to the API directly)  [~/.claude/settings.json]" in out


def test_on_then_off_keeps_a_gateway_and_restores_the_file(process_service, capsys):
    port = process_service
    path = write_settings(GATEWAY)
    code, out, _ = run(capsys, "autopilot", "on", "--timeout", "30")
    assert code == 0, out
    assert "autopilot:        on" in out and f"answering on 127.0.0.1:{port}" in out
    assert "upstream:         https://llm-gateway.example.com/anthropic  (your previous gateway)" in out
    code, out, _ = run(capsys, "autopilot", "status", "--json")
    st = json.loads(out)
    assert st["settings_base_url"] == f"http://127.0.0.1:{port}" and st["settings_point_here"] is True
    assert st["gateway"] == "https://llm-gateway.example.com/anthropic" and st["proxy_answering"] is True
    code, out, _ = run(capsys, "autopilot", "off", "--json")
    assert code == 0
    st = json.loads(out)
    assert (st["enabled"], st["service_installed"], st["proxy_answering"]) == (False, False, False)
    assert st["upstream"] == "https://api.anthropic.com"  # the gateway left the upstream with autopilot
    assert path.read_bytes() == GATEWAY


def test_status_names_a_setting_that_points_at_a_dead_port(process_service, capsys):
    port = process_service
    write_settings(json.dumps({"env": {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}}).encode())
    code, out, _ = run(capsys, "autopilot", "status")
    assert code == 0
    assert (f"problem:          Claude Code points at 127.0.0.1:{port} but no proxy answers; "
            "run `scalpel autopilot off` or start the proxy") in out


def test_unparsable_settings_status_reports_off_refuses(process_service, capsys):
    path = write_settings(b"{oops")
    code, out, _ = run(capsys, "autopilot", "status", "--json")
    assert code == 0 and any("does not parse" in p for p in json.loads(out)["problems"])
    code, out, err = run(capsys, "autopilot", "off")
    assert code == 1 and out == ""
    assert err.startswith("scalpel: ") and str(path) in err and "does not parse" in err
    assert path.read_bytes() == b"{oops"


@pytest.mark.parametrize(("argv", "message"), [
    (["autopilot"], "the following arguments are required: ACTION"),
    (["autopilot", "on", "--timeout", "soon"], "invalid float value: 'soon'"),
    (["autopilot", "restart"], "invalid choice: 'restart'"),
])
def test_bad_arguments_exit_2_with_argparses_message(process_service, capsys, argv, message):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err
