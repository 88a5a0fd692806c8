"""``bench/profile.py``: finding the session to profile, and where one session's tokens go."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from scalpel_desktop.accounting.estimator import estimate_block, model_family
from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.profile import REST, ProfileError, latest_session, profile_file, resolve
from scalpel_desktop.bench.reader import read_file
from tests.bench.transcripts import Transcript, simple_session, text, tool_use, usage


def touch(path, mtime: float):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}\n")
    os.utime(path, (mtime, mtime))
    return path


def test_latest_session_is_the_newest_main_transcript_not_a_subagents(tmp_path):
    touch(tmp_path / "p" / "old.jsonl", 1000)
    new = touch(tmp_path / "p" / "new.jsonl", 2000)
    touch(tmp_path / "p" / "agent-1.jsonl", 3000)
    touch(tmp_path / "p" / "s" / "subagents" / "x.jsonl", 3000)
    assert latest_session(tmp_path) == new
    with pytest.raises(ProfileError, match="no Claude Code session transcripts found"):
        latest_session(tmp_path / "p" / "s")  # only a subagent's file there


def test_resolve_a_path_an_id_prefix_or_nothing(tmp_path):
    near = touch(tmp_path / "p" / "abc123.jsonl", 1000)
    touch(tmp_path / "p" / "deeper" / "abc999.jsonl", 2000)
    assert resolve(str(near), tmp_path) == near
    with pytest.raises(ProfileError, match="'abc' is ambiguous"):  # two sessions match: say so, pick none
        resolve("abc", tmp_path)
    assert resolve("abc1", tmp_path) == near  # a unique prefix
    assert resolve("abc9", tmp_path).name == "abc999.jsonl"
    assert resolve(None, tmp_path).name == "abc999.jsonl"  # the latest
    with pytest.raises(ProfileError, match="no session file or id matching 'zzz'"):
        resolve("zzz", tmp_path)


def test_a_transcript_without_requests_is_refused(tmp_path):
    tr = Transcript()
    tr.user("hi, nobody answered")
    path = tr.write(tmp_path / "s.jsonl")
    with pytest.raises(ProfileError, match="holds no API requests with usage"):
        profile_file(path)


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    path = simple_session(tmp_path_factory.mktemp("p") / "s.jsonl", turns=8)
    return path, read_file(path).sequences[0]


def test_context_is_the_real_prompt_of_each_request(session):
    path, seq = session
    prof = profile_file(path, prices=PriceTable.builtin())
    assert prof.requests == len(seq.requests) == 8
    assert prof.context == [r.usage.prompt_tokens for r in seq.requests]
    assert prof.context[0] == 15_003 and prof.context == sorted(prof.context)
    assert prof.session == seq.session_id and prof.model == "claude-sonnet-4-5-20250929"


def test_tokens_by_kind_add_up_to_the_last_request_and_the_prefix_is_inferred(session):
    path, seq = session
    prof = profile_file(path, prices=PriceTable.builtin())
    fam = model_family(seq.requests[-1].model)
    history = sum(estimate_block(b, fam) for ln in seq.requests[-1].history for b in ln.blocks)
    kinds = dict(prof.by_kind)
    assert sum(kinds.values()) == prof.measured_tokens == seq.requests[-1].usage.prompt_tokens
    assert kinds.pop("prefix (system + tools, inferred)") == prof.prefix_tokens
    first = sum(estimate_block(b, fam) for ln in seq.requests[0].history for b in ln.blocks)
    assert prof.prefix_tokens == seq.requests[0].usage.prompt_tokens - first
    rest = kinds.pop(REST, 0)
    assert prof.estimate_scale == 1.0  # this session's estimates fit in what was measured: the rest has its line
    assert sum(kinds.values()) == history and rest == prof.measured_tokens - prof.prefix_tokens - history
    assert sum(prof.by_tool.values()) == kinds["tool_results"]
    assert list(prof.by_tool) == ["Read", "Edit"]  # largest first: three big reads, one big edit result


def _two_requests(path, last_writes: int):
    """A prompt of 15,000 tokens, a big Read result, then a request whose measured prompt grew by
    ``last_writes``: below the result's estimate, or above it."""
    tr = Transcript()
    tr.user("Please fix a.py")
    tr.response([text("Reading."), tool_use("toolu_0")], usage(w5=15_000))
    tr.result("toolu_0", "x = 1\n" * 3000)
    tr.response([text("Done.")], usage(read=15_000, w5=last_writes))
    return tr.write(path)


@pytest.mark.parametrize("last_writes, over", [(40, True), (200_000, False)])
def test_the_estimated_split_never_adds_up_to_more_than_the_measured_total(tmp_path, last_writes, over):
    """The estimator is not the tokenizer: where it counts more than the provider measured, the
    kinds are scaled down to the measurement (their shares kept); where less, the rest has its line."""
    path = _two_requests(tmp_path / "s.jsonl", last_writes)
    seq = read_file(path).sequences[0]
    prof = profile_file(path, prices=PriceTable.builtin())
    fam = model_family(seq.requests[-1].model)
    estimate = sum(estimate_block(b, fam) for ln in seq.requests[-1].history for b in ln.blocks)
    measured = seq.requests[-1].usage.prompt_tokens
    assert sum(prof.by_kind.values()) == prof.measured_tokens == measured
    room = measured - prof.prefix_tokens
    assert (estimate > room) == over
    if over:  # the case that once added up to more than measured
        assert prof.estimate_scale == pytest.approx(room / estimate) and REST not in prof.by_kind
        assert sum(prof.by_tool.values()) == prof.by_kind["tool_results"] < estimate
        assert prof.largest[0]["tokens"] <= prof.by_kind["tool_results"]
    else:
        assert prof.estimate_scale == 1.0 and prof.by_kind[REST] == room - estimate > 0


def test_largest_results_are_sorted_and_cut_at_top(session):
    path, _ = session
    prof = profile_file(path, prices=PriceTable.builtin(), top=3)
    assert len(prof.largest) == 3
    keys = [(-r["tokens"], r["tool_use_id"]) for r in prof.largest]
    assert keys == sorted(keys)
    assert prof.largest[0]["tool"] == "Read" and prof.largest[0]["tool_use_id"] == "toolu_0"


def test_dead_weight_is_priced_at_the_cache_read_rate_from_death_to_the_end(session):
    path, seq = session
    prices = PriceTable.builtin()
    prof = profile_file(path, prices=prices)
    assert set(prof.dead) == {"superseded_read"}  # the same file read again and again
    dead = prof.dead["superseded_read"]
    rate = prices.rates(seq.requests[0].model).cache_read
    assert dead["results"] >= 1 and dead["tokens"] > 0
    # carried at least by the request where it died, at most by all of them
    assert dead["tokens"] * rate <= dead["cost_usd"] + 1e-9 <= dead["tokens"] * rate * len(seq.requests) + 1e-9
    # at one dollar a token read, the cost counts each dead token once per request that carried it
    unit = profile_file(path, prices=SimpleNamespace(rates=lambda model: SimpleNamespace(cache_read=1.0)))
    carried = unit.dead["superseded_read"]["cost_usd"] / (dead["tokens"] / dead["results"])
    assert carried == int(carried) and dead["results"] <= carried <= dead["results"] * len(seq.requests)
    assert unit.dead["superseded_read"]["cost_usd"] == pytest.approx(dead["cost_usd"] / rate, rel=1e-4)
