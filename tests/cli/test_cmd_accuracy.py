"""``scalpel accuracy``: the estimator's scores on a folder of transcripts."""

from __future__ import annotations

import json

from scalpel_desktop.cli import main
from tests.bench.transcripts import simple_session


def test_accuracy_json_scores_every_family_and_all(tmp_path, capsys):
    simple_session(tmp_path / "proj" / "abcdef12-0000.jsonl", turns=8)
    assert main(["accuracy", str(tmp_path), "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)["scores"]
    assert scores[-1]["family"] == "all"
