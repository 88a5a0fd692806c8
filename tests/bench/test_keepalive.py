"""The bench's keep-alive arms: pings while the answer waits for a person, priced; never a live feature."""

from __future__ import annotations

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.keepalive import KeepAliveArm, ping_limit, waits_for_person
from scalpel_desktop.bench.reader import read_file
from scalpel_desktop.bench.replay import replay_sequence
from scalpel_desktop.bench.simulate import SequenceSimulator
from tests.bench.transcripts import Transcript, simple_session, text, tool_use, usage

PRICES = PriceTable.builtin()


def test_ping_limit_from_the_price_table_and_the_factor():
    r = PRICES.rates("claude-sonnet-4-5-20250929")  # read 0.1x, 5m write 1.25x, 1h write 2x
    assert ping_limit(r, "5m", 2.0) == 5  # (1.25 - 0.1) / (2 x 0.1) = 5.75
    assert ping_limit(r, "1h", 2.0) == 9  # (2 - 0.1) / 0.2 = 9.5


def test_a_pause_after_a_tool_call_is_kept_alive_and_the_pings_are_paid(tmp_path):
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=8, gap_at=5, gap=600.0)).sequences[0]
    assert all(waits_for_person(r) for r in seq.requests)  # each answer ends in a tool call
    sim = SequenceSimulator(seq, PRICES)
    off = sim.arm()
    kept = sim.arm(kind=KeepAliveArm)
    for k in range(len(seq.requests)):
        off.step(k)
        kept.step(k)
    kept.finish()
    # the 600 s pause before request 5: pings at +270 and +540, then request 5 reads its prefix
    assert off.bill.requests[5].sim.cache_read < kept.bill.requests[5].sim.cache_read
    assert kept.bill.requests[5].sim.cache_read >= seq.requests[4].usage.prompt_tokens * 0.99
    # and after the last answer (it waits too) the worst case: all 5 pings, nobody came back
    assert kept.pings_sent == 2 + 5 and kept.bill.extra_requests == 7 and kept.bill.extra_cost > 0


def test_a_plain_end_of_turn_is_not_pinged(tmp_path):
    tr = Transcript()
    tr.user("hi")
    tr.response([text("hello")], usage(w5=15_000))
    tr.user("more", dt=900.0)
    tr.response([text("ok")], usage(w5=15_100))
    seq = read_file(tr.write(tmp_path / "t.jsonl")).sequences[0]
    assert not waits_for_person(seq.requests[0])
    res = replay_sequence(seq, PRICES, policies=["off", "keepalive"], ceiling=False)
    assert res.cuts["keepalive"] == 0 and res.cost("keepalive") == res.real_cost


def test_as_5m_writes_cheaper_but_loses_the_long_pauses(tmp_path):
    tr = Transcript()
    tr.user("hi")
    tr.response([text("a"), tool_use("toolu_0")], usage(w1=15_000))
    tr.result("toolu_0", "x" * 3000, dt=1000.0)  # 1000 s: alive at 1h, expired at 5m
    tr.response([text("b"), tool_use("toolu_1")], usage(read=15_000, w1=1_000))
    seq = read_file(tr.write(tmp_path / "h.jsonl")).sequences[0]
    res = replay_sequence(seq, PRICES, policies=["off", "as-5m", "as-5m+keepalive"], ceiling=False)
    assert res.cost("as-5m") > res.real_cost  # the 5m entry expired in the pause: a full rewrite
    assert res.cost("as-5m+keepalive") < res.cost("as-5m")  # the pings kept it
