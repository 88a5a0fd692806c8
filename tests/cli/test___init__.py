"""cli/__init__.py: ``main`` turns a command's outcome into an exit status and one line of error."""

from __future__ import annotations

import argparse

import pytest

from scalpel_desktop import cli


def parser_running(func):
    parser = argparse.ArgumentParser(prog="scalpel")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("go").set_defaults(func=func)
    return parser


@pytest.mark.parametrize("outcome, status", [(None, 0), (0, 0), (3, 3), (True, 1)])
def test_the_commands_return_value_is_the_exit_status(monkeypatch, outcome, status):
    monkeypatch.setattr(cli, "build_parser", lambda: parser_running(lambda args: outcome))
    assert cli.main(["go"]) == status


def test_a_cli_error_prints_one_line_and_uses_its_status(monkeypatch, capsys):
    def fail(args):
        raise cli.CliError("no such session 'x'; try `scalpel log --sessions`", status=4)

    monkeypatch.setattr(cli, "build_parser", lambda: parser_running(fail))
    assert cli.main(["go"]) == 4
    assert capsys.readouterr().err == "scalpel: no such session 'x'; try `scalpel log --sessions`\n"


@pytest.mark.parametrize("exc, status", [(KeyboardInterrupt, 130), (BrokenPipeError, 0)])
def test_interrupt_and_a_closed_pipe(monkeypatch, exc, status):
    def raise_(args):
        raise exc

    monkeypatch.setattr(cli, "build_parser", lambda: parser_running(raise_))
    assert cli.main(["go"]) == status


def test_other_errors_are_not_swallowed(monkeypatch):
    def bug(args):
        raise ZeroDivisionError

    monkeypatch.setattr(cli, "build_parser", lambda: parser_running(bug))
    with pytest.raises(ZeroDivisionError):
        cli.main(["go"])


def test_every_cmd_module_is_registered_and_version_is_the_packages(capsys):
    import pkgutil

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    modules = [m.name for m in pkgutil.iter_modules(cli.__path__) if m.name.startswith("cmd_")]
    assert len(sub.choices) >= len(modules) > 10
    with pytest.raises(SystemExit):
        parser.parse_args(["--version"])
    from scalpel_desktop import __version__

    assert capsys.readouterr().out.strip() == f"scalpel-desktop {__version__}"
