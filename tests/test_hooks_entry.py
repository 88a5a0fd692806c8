"""hooks_entry.py: Claude Code's hook and statusline entry point: exit 0 and silence on any error."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from scalpel_desktop import hooks_entry


class Stdin:
    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


def run_main(monkeypatch, capsys, argv, stdin=b""):
    monkeypatch.setattr(sys, "stdin", Stdin(stdin))
    status = hooks_entry.main(argv)
    return status, capsys.readouterr()


@pytest.mark.parametrize("stdin", [b"", b"   ", b"[1, 2]", b'"text"'])
def test_stdin_that_is_not_an_object_reads_as_empty(monkeypatch, stdin):
    monkeypatch.setattr(sys, "stdin", Stdin(stdin))
    assert hooks_entry._read_stdin() == {}


def test_an_unknown_or_missing_event_prints_nothing(monkeypatch, capsys):
    assert run_main(monkeypatch, capsys, ["no-such-event"], b"{}") == (0, capsys.readouterr())
    status, out = run_main(monkeypatch, capsys, [], b"{}")
    assert status == 0 and out.out == "" and out.err == ""


def test_any_error_even_bad_json_is_silent_and_exit_0(monkeypatch, capsys):
    status, out = run_main(monkeypatch, capsys, ["pre-tool-use"], b"{not json")
    assert (status, out.out, out.err) == (0, "", "")

    def boom(event, payload):
        raise KeyboardInterrupt

    monkeypatch.setattr(hooks_entry, "run", boom)
    status, out = run_main(monkeypatch, capsys, ["statusline"], b"{}")
    assert (status, out.out, out.err) == (0, "", "")


def test_text_is_printed_with_one_trailing_newline(monkeypatch, capsys):
    answers = iter(["line", "already\n", None])
    monkeypatch.setattr(hooks_entry, "run", lambda event, payload: next(answers))
    assert run_main(monkeypatch, capsys, ["x"], b"{}")[1].out == "line\n"
    assert run_main(monkeypatch, capsys, ["x"], b"{}")[1].out == "already\n"
    assert run_main(monkeypatch, capsys, ["x"], b"{}")[1].out == ""


def test_the_payload_reaches_run(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(hooks_entry, "run", lambda event, payload: seen.append((event, payload)))
    run_main(monkeypatch, capsys, ["post-tool-use"], json.dumps({"tool_name": "Read"}).encode())
    assert seen == [("post-tool-use", {"tool_name": "Read"})]


def test_as_claude_code_runs_it_isolated_it_imports_no_heavy_library():
    code = ("import sys, io; sys.stdin = io.TextIOWrapper(io.BytesIO(b'{}'));"
            "import scalpel_desktop.hooks_entry as h; h.main(['no-such-event']);"
            "print(sorted(m for m in ('aiohttp', 'textual', 'orjson', 'pystray') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_garbage_on_stdin_of_the_real_command_exits_0_silently():
    for event in ("pre-tool-use", "post-tool-use", "session-start", "statusline"):
        done = subprocess.run([sys.executable, "-I", "-m", "scalpel_desktop.hooks_entry", event],
                              input=b"\xff\xfe garbage", capture_output=True, timeout=60, check=False)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), event
