"""The user-facing error hierarchy: title, message, render, status, and the builtin bases kept."""

from __future__ import annotations

import pytest

from scalpel_desktop import config, control_client, runtime
from scalpel_desktop.accounting import prices
from scalpel_desktop.cli import CliError, main
from scalpel_desktop.errors import (
    ActionError,
    CommandError,
    DataError,
    ProxyError,
    ScalpelError,
    SettingError,
)
from scalpel_desktop.tools import removals


def test_str_is_the_message_and_render_prefixes_the_class_title():
    e = DataError("prices.json line 3: \"input\" must be a number")
    assert str(e) == e.message == "prices.json line 3: \"input\" must be a number"
    assert e.render() == "Bad data: prices.json line 3: \"input\" must be a number"
    assert SettingError("x").render() == "Invalid setting: x"


def test_a_title_given_to_one_error_does_not_leak_to_its_class():
    e = ProxyError("port 8788 is taken", title="Cannot start")
    assert e.render() == "Cannot start: port 8788 is taken"
    assert ProxyError("y").title == "Proxy"


def test_statuses_default_and_can_be_given():
    assert ActionError("no such tool").status == 400
    assert ActionError("busy", 409).status == 409
    assert CommandError("nope").status == 1
    assert CommandError("usage", status=2, title="t").render() == "t: usage"


@pytest.mark.parametrize("cls,builtin", [(SettingError, ValueError), (DataError, ValueError),
                                         (ProxyError, RuntimeError)])
def test_existing_except_handlers_still_catch_them(cls, builtin):
    with pytest.raises(builtin):
        raise cls("m")


@pytest.mark.parametrize("cls,base", [
    (config.ConfigError, SettingError),
    (runtime.AlreadyRunning, ProxyError),
    (control_client.ControlError, ProxyError),
    (control_client.ProxyNotRunning, control_client.ControlError),
    (prices.PriceTableError, DataError),
    (removals.RemovalError, DataError),
    (CliError, CommandError),
])
def test_the_errors_beside_their_code_derive_from_the_hierarchy_as_drawn(cls, base):
    assert issubclass(cls, base) and issubclass(cls, ScalpelError)


def _cli_with(monkeypatch, func):
    """``scalpel`` whose parser hands back one command calling ``func``."""
    import argparse

    from scalpel_desktop import cli

    class Parser:
        def parse_args(self, argv):
            return argparse.Namespace(func=func)

    monkeypatch.setattr(cli, "build_parser", Parser)


def test_the_cli_renders_title_and_message_once_with_the_status_as_exit_code(monkeypatch, capsys):
    def refuse(args):
        raise CommandError("nothing to do here; try `scalpel report`", status=3)

    _cli_with(monkeypatch, refuse)
    assert main([]) == 3
    assert capsys.readouterr().err == "scalpel: nothing to do here; try `scalpel report`\n"


def test_the_cli_exits_1_for_an_error_without_a_status(monkeypatch, capsys):
    def bad_setting(args):
        raise config.ConfigError("unknown setting 'polcy'; did you mean 'policy'?")

    _cli_with(monkeypatch, bad_setting)
    assert main([]) == 1
    assert capsys.readouterr().err == "Invalid setting: unknown setting 'polcy'; did you mean 'policy'?\n"
