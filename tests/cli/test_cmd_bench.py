from __future__ import annotations

import json
import os
import subprocess
import sys

from scalpel_desktop.cli import main
from tests.bench.transcripts import simple_session
from tests.support import REPO, corpus_dir


def _run(args, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "scalpel_desktop", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)


def test_bench_json_and_html_on_a_synthetic_dir(tmp_path, capsys):
    simple_session(tmp_path / "proj" / "a.jsonl", turns=12, gap_at=8, gap=2000.0)
    html = tmp_path / "out.html"
    assert main(["bench", str(tmp_path), "--json", "--sessions", "--html", str(html)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["sessions_replayed"] == 1
    assert doc["baseline"] == "real"
    assert doc["real_cost_usd"] > 0
    assert set(doc["skipped"]) >= {"too_short", "oversized", "unreadable_lines", "errors"}
    assert set(doc["check"]) >= {"real_cost_usd", "simulated_cost_usd", "error_pct"}
    names = [p["name"] for p in doc["policies"]]
    assert names == ["off", "cold", "death", "payback", "naive", "first-party", "keepalive", "as-5m"]
    for p in doc["policies"]:
        assert set(p) >= {"name", "cost_usd", "saving_usd", "saving_pct", "sessions_worse", "worst_session_pct",
                          "proven_saving_pct", "hinted_saving_pct", "hinted_sessions_worse"}
        assert p["proven_saving_pct"] == p["saving_pct"]  # the headline is the provable saving
        # the saving is a share of the real bill
        assert abs(p["saving_pct"] - 100 * p["saving_usd"] / doc["real_cost_usd"]) < 0.01
    assert doc["policies"][0]["cost_usd"] == doc["real_cost_usd"]
    assert "ceiling" in doc
    assert len(doc["sessions"]) == 1
    page = html.read_text(encoding="utf-8")
    assert "<svg" in page and "</html>" in page and "http" not in page.replace("http://www.w3.org/2000/svg", "")


def test_bench_table_and_errors(tmp_path, capsys):
    simple_session(tmp_path / "a.jsonl", turns=6)
    assert main(["bench", str(tmp_path), "--tier", "1"]) == 0
    out = capsys.readouterr().out
    assert "cold" in out and "Check:" in out and "real bill" in out and "Skipped" in out
    assert main(["bench", str(tmp_path / "missing")]) == 1
    assert "no such file" in capsys.readouterr().err
    # no argument: the user's own transcripts (none in the test HOME)
    assert main(["bench"]) == 1


def test_bench_reads_the_users_own_transcripts(tmp_path, capsys):
    projects = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "projects", "-home-u-proj")
    simple_session(__import__("pathlib").Path(projects) / "s.jsonl", turns=5)
    assert main(["bench", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sessions_replayed"] == 1


def test_bench_json_is_byte_identical_across_hash_seeds():
    root = corpus_dir("transcripts")
    a = _run(["bench", str(root), "--json", "--sessions"], {"PYTHONHASHSEED": "1"})
    b = _run(["bench", str(root), "--json", "--sessions"], {"PYTHONHASHSEED": "4242"})
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout
    doc = json.loads(a.stdout)
    assert doc["sessions_replayed"] > 40
    assert doc["requests_replayed"] > 1000
    assert abs(doc["check"]["error_pct"]) <= 2.0


def test_bench_progress_goes_to_stderr_and_never_into_json(tmp_path):
    from tests.bench.transcripts import simple_session as s

    s(tmp_path / "a.jsonl", turns=6)
    r = _run(["bench", str(tmp_path), "--json"])
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)  # nothing but the document


def test_bench_jobs_give_the_same_json_and_a_bad_count_is_named(tmp_path, capsys):
    import pytest

    for i in range(3):
        simple_session(tmp_path / "proj" / f"s{i}.jsonl", turns=10 + 4 * i, gap_at=6, gap=2000.0)
    outs = []
    for jobs in ("1", "2"):
        assert main(["bench", str(tmp_path), "--json", "--sessions", "--jobs", jobs]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and json.loads(outs[0])["sessions_replayed"] == 3
    with pytest.raises(SystemExit):
        main(["bench", str(tmp_path), "--jobs", "0"])
    assert "--jobs takes a whole number of processes, 1 or more (got '0')" in capsys.readouterr().err
