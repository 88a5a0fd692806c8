"""``scalpel profile``: where one session's tokens go."""

from __future__ import annotations

import json

from scalpel_desktop.cli import main
from tests.bench.transcripts import simple_session


def test_profile_json_table_and_a_missing_session(tmp_path, capsys):
    path = simple_session(tmp_path / "proj" / "abcdef12-0000.jsonl", turns=8)
    assert main(["profile", str(path), "--json"]) == 0
    prof = json.loads(capsys.readouterr().out)
    assert prof["requests"] == 8 and prof["by_tool"]
    assert main(["profile", str(path)]) == 0
    assert "tokens by kind" in capsys.readouterr().out
    assert main(["profile", "nosuchsession"]) == 1
