from __future__ import annotations

import json

from scalpel_desktop.bench.reader import find_sessions, iter_sequences, read_corpus, read_file
from tests.bench.transcripts import Transcript, text, tool_use, usage
from tests.support import corpus_dir


def test_split_response_counts_once_and_history_is_rebuilt(tmp_path):
    tr = Transcript()
    tr.user("hello")
    tr.response([{"type": "thinking", "thinking": "hmm", "signature": "sig"}, text("Reading."), tool_use("t1")],
                usage(w5=12_000))
    tr.result("t1", "file body")
    tr.response([text("Done.")], usage(read=12_000, w5=40))
    seqs = read_file(tr.write(tmp_path / "s.jsonl")).sequences
    assert len(seqs) == 1
    reqs = seqs[0].requests
    assert len(reqs) == 2  # 4 assistant lines, 2 requests
    msgs = reqs[1].messages
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert [b["type"] for b in msgs[1]["content"]] == ["thinking", "text", "tool_use"]
    assert msgs[2]["content"][0]["content"] == "file body"
    assert reqs[1].usage.cache_read == 12_000
    assert reqs[0].usage.cache_write_5m == 12_000


def test_bad_line_and_noise_are_skipped_not_fatal(tmp_path):
    tr = Transcript()
    tr.noise()
    tr.user("hello")
    tr.raw('{"type": "user", "message": {"role": "us')  # truncated line
    tr.raw("[1, 2]")
    tr.response([text("hi")], usage(w5=5000))
    fr = read_file(tr.write(tmp_path / "s.jsonl"))
    assert fr.bad_lines == 2
    assert len(fr.sequences[0].requests) == 1


def test_sidechains_are_their_own_sequences(tmp_path):
    main = Transcript()
    main.user("do two things")
    main.response([tool_use("task1", "Task", prompt="sub")], usage(w5=9000))
    side = Transcript(sidechain=True)
    side.session = main.session
    side.t = main.t
    side.user("sub", parent=None)
    side.response([text("sub done")], usage(w5=3000))
    main.lines += side.lines
    main.result("task1", "sub done")
    main.response([text("ok")], usage(read=9000, w5=100))
    seqs = read_file(main.write(tmp_path / "s.jsonl")).sequences
    kinds = sorted((s.kind, len(s.requests)) for s in seqs)
    assert kinds == [("main", 2), ("sidechain", 1)]
    side_req = next(s for s in seqs if s.kind == "sidechain").requests[0]
    assert [m["role"] for m in side_req.messages] == ["user"]


def test_subagent_files_are_found_and_separate(tmp_path):
    main = Transcript()
    main.user("hi")
    main.response([text("hello")], usage(w5=9000))
    main.write(tmp_path / "proj" / "sess.jsonl")
    sub = Transcript(sidechain=True, agent="a123")
    sub.user("task")
    sub.response([text("r")], usage(w5=4000))
    sub.write(tmp_path / "proj" / "sess" / "subagents" / "agent-a123.jsonl")
    files = find_sessions(tmp_path)
    assert [f.name for f in files] == ["sess.jsonl", "agent-a123.jsonl"] or len(files) == 2
    seqs = list(iter_sequences(read_corpus(tmp_path)))
    assert sorted(s.kind for s in seqs) == ["main", "subagent"]
    assert next(s for s in seqs if s.kind == "subagent").agent_id == "a123"


def test_compaction_restarts_the_history(tmp_path):
    tr = Transcript()
    tr.user("first task")
    tr.response([text("done 1")], usage(w5=9000))
    tr.user("second")
    tr.response([text("done 2")], usage(read=9000, w5=50))
    tr.compact("This session is being continued from a previous conversation. Summary: ...")
    tr.response([text("continuing")], usage(w5=7000))
    reqs = read_file(tr.write(tmp_path / "s.jsonl")).sequences[0].requests
    assert len(reqs) == 3
    last = reqs[2].messages
    assert len(last) == 1 and "continued" in last[0]["content"][0]["text"]


def test_model_switch_and_timestamps(tmp_path):
    tr = Transcript()
    tr.user("a")
    tr.response([text("1")], usage(w5=9000))
    tr.user("b", dt=400.0)
    tr.response([text("2")], usage(w5=9100), model="claude-opus-4-1-20250805")
    reqs = read_file(tr.write(tmp_path / "s.jsonl")).sequences[0].requests
    assert [r.model for r in reqs] == ["claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805"]
    assert reqs[1].ts - reqs[0].ts_done >= 399.0


def test_rewound_branch_keeps_only_its_ancestors(tmp_path):
    tr = Transcript()
    root = tr.user("start")
    tr.response([text("one")], usage(w5=9000))
    tr.user("abandoned")
    tr.response([text("two")], usage(read=9000, w5=20))
    tr.last = root
    tr.response([text("redo")], usage(read=9000, w5=10))
    reqs = read_file(tr.write(tmp_path / "s.jsonl")).sequences[0].requests
    assert len(reqs) == 3
    assert [m["role"] for m in reqs[2].messages] == ["user"]


def _distinct_ids(path):
    ids = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and d.get("type") == "assistant" and isinstance(d.get("message"), dict):
            m = d["message"]
            if m.get("model") == "<synthetic>" or not m.get("usage"):
                continue
            ids.add(d.get("requestId") or m.get("id"))
    return ids


def test_corpus_request_count_equals_distinct_request_ids():
    root = corpus_dir("transcripts")
    results = read_corpus(root)
    assert results
    for fr in results:
        got = sum(len(s.requests) for s in fr.sequences)
        assert got == len(_distinct_ids(fr.path)), fr.path
    total = sum(len(s.requests) for s in iter_sequences(results))
    assert total == sum(len(_distinct_ids(fr.path)) for fr in results)
    assert total > 1000


def test_corpus_histories_pair_every_tool_use_with_its_result():
    for seq in iter_sequences(read_corpus(corpus_dir("transcripts"))):
        for req in seq.requests:
            uses, results = set(), set()
            for m in req.messages:
                for b in m["content"]:
                    if b.get("type") == "tool_use":
                        uses.add(b["id"])
                    elif b.get("type") == "tool_result":
                        results.add(b["tool_use_id"])
            assert uses == results, (seq.path, req.request_id)
            # some old agent files hold no prompt line at all: an empty history, never a dangling one
            assert not req.messages or req.messages[-1]["role"] == "user"


def _block_set(messages):
    from scalpel_desktop.accounting.tokens import canonical_block
    from scalpel_desktop.wire.jsoncodec import dumps

    out = []
    for m in messages:
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        out += [(m["role"], dumps(canonical_block(b))) for b in content]
    return out


def test_wire_transcript_matches_the_captured_requests():
    """Claude Code 2.0.77's capture: each rebuilt history is a sent one, block for block, but for at
    most two blocks the client changed or added before sending (a reminder, a rewritten output)."""
    wire = corpus_dir("wire", "claude-code-2.0.77")
    rows = [json.loads(line) for line in (wire / "requests.jsonl").read_text(encoding="utf-8").splitlines()]
    sent = [_block_set(r["body"]["messages"]) for r in rows if "messages" in r["body"]]
    main = next(s for s in iter_sequences(read_corpus(wire / "transcript")) if s.kind == "main")
    assert len(main.requests) >= 10
    for req in main.requests:
        ours = _block_set(req.messages)
        best = max(sent, key=lambda w: (sum(1 for b in ours if b in set(w)), -abs(len(w) - len(ours))))
        hit = sum(1 for b in ours if b in set(best))
        assert hit >= len(ours) - 2 and len(best) <= len(ours) + 2, req.request_id
