"""One simulator arm: its own cache, billed request by request; the hooks other arms use."""

from __future__ import annotations

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.arm import Arm
from scalpel_desktop.bench.reader import read_file
from scalpel_desktop.bench.simulate import SequenceSimulator
from tests.bench.transcripts import Transcript, simple_session, text, tool_use, usage

PRICES = PriceTable.builtin()


def test_an_arm_bills_every_request_to_its_real_prompt(tmp_path):
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=6)).sequences[0]
    arm = SequenceSimulator(seq, PRICES).arm()
    for k in range(len(seq.requests)):
        rb = arm.step(k)
        assert rb.tokens == seq.requests[k].usage.prompt_tokens
    assert arm.bill.extra_cost == 0 and len(arm.bill.requests) == len(seq.requests)


class FiveMinutes(Arm):
    def ttl_for(self, req):
        return "5m"


class OwnReads(Arm):
    def follows_usage(self, k, req):
        return False  # the cache model alone decides where each read stops


def _one_hour_pause(tmp_path):
    tr = Transcript()
    tr.user("hi")
    tr.response([text("a"), tool_use("toolu_0")], usage(w1=15_000))
    tr.result("toolu_0", "x" * 3000, dt=1000.0)
    tr.response([text("b"), tool_use("toolu_1")], usage(read=15_000, w1=1_000))
    return read_file(tr.write(tmp_path / "h.jsonl")).sequences[0]


def test_the_ttl_hook_changes_what_is_written_and_what_survives_a_pause(tmp_path):
    seq = _one_hour_pause(tmp_path)
    sim = SequenceSimulator(seq, PRICES)
    arm = sim.arm(kind=FiveMinutes)
    first = arm.step(0)
    assert first.sim.cache_write_5m > 0 and first.sim.cache_write_1h == 0


def test_the_usage_hook_lets_the_cache_model_decide(tmp_path):
    seq = _one_hour_pause(tmp_path)
    sim = SequenceSimulator(seq, PRICES)
    follows, own = sim.arm(), sim.arm(kind=OwnReads)
    for k in range(2):
        a, b = follows.step(k), own.step(k)
    assert a.sim.cache_read == b.sim.cache_read >= seq.requests[1].usage.cache_read  # 1h: alive either way
    five = sim.arm(kind=type("Both", (FiveMinutes, OwnReads), {}))
    five.step(0)
    assert five.step(1).sim.cache_read < seq.requests[1].usage.cache_read  # 5m expired in the 1000 s pause


def test_a_cut_continues_the_chain_from_where_it_changed_as_a_fresh_build_would():
    from scalpel_desktop.bench.arm import _Units

    keys = [("prefix", 100)] + [(i, 0) for i in range(8)]
    roles = ["system"] + ["user", "assistant"] * 4
    tokens = [100] + [10 * (i + 1) for i in range(8)]
    ids: dict = {}  # the sequence's chains (shared by its arms)
    units = _Units(ids)
    units.sync(keys, roles, tokens)
    uncut = list(units.pb.blocks)
    cut = list(keys)
    cut[4] = cut[4] + ("stub",)
    cut_tokens = list(tokens)
    cut_tokens[4] = 1
    units.sync(cut, roles, cut_tokens)  # unit 4 changed: the chain from there on is rebuilt
    fresh = _Units(ids)
    fresh.sync(cut, roles, cut_tokens)
    assert units.pb.blocks == fresh.pb.blocks
    assert units.pb.blocks[:4] == uncut[:4]
    assert all(a.chain != b.chain for a, b in zip(units.pb.blocks[4:], uncut[4:]))  # a new prefix from unit 4 on
    assert len({b.chain for b in units.pb.blocks + uncut}) == len(keys) + len(keys) - 4
    longer = cut + [(8, 0)]
    units.sync(longer, roles + ["user"], cut_tokens + [5])  # and it extends as a fresh build does
    again = _Units(ids)
    again.sync(longer, roles + ["user"], cut_tokens + [5])
    assert units.pb.blocks == again.pb.blocks
    other = _Units(ids)  # the same units in other messages: other chains
    other.sync(keys, ["system"] + ["user"] * 8, tokens)
    assert other.pb.blocks[0] == uncut[0] and all(a.chain != b.chain for a, b in zip(other.pb.blocks[2:], uncut[2:]))


@pytest.mark.parametrize("pings", [False, True])
def test_the_bound_on_what_an_arms_entries_hold_holds_after_every_bill(tmp_path, pings):
    from tests.bench.test_keepalive import keeper_arm

    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=8, gap_at=5, gap=900.0)).sequences[0]
    sim = SequenceSimulator(seq, PRICES)
    # the keeper's pings bill entries of their own (a user who comes back after 15 minutes, funded)
    arm, driver = keeper_arm(seq, sim, returns=(900.0,) * 6) if pings else (sim.arm(), None)
    try:
        for k in range(len(seq.requests)):
            arm.step(k)
            reach = max((e.tokens for e in arm.cache.entries.values()), default=-1)
            assert reach <= arm._reach[seq.requests[k].model]  # the bound the scan is skipped on holds
    finally:
        if driver is not None:
            driver.close()
    assert arm.cache.entries
    assert not pings or arm.pings_sent > 0


def _cut_from(at: int, seq, sim):
    """Cuts of the session's first result from request ``at`` on (none before)."""
    from scalpel_desktop.bench.simulate import Stub

    tid = next(t for k in range(len(seq.requests)) for t in sim.result_units(k))
    return lambda k, req: {tid: Stub("stub", 3)} if k >= at and tid in sim.result_units(k) else {}


@pytest.mark.parametrize("free", [False, True])
@pytest.mark.parametrize("at", [0, 3, 5, 99])
def test_a_follower_bills_what_it_would_bill_on_its_own(tmp_path, at, free):
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=8, gap_at=5, gap=900.0)).sequences[0]
    sim = SequenceSimulator(seq, PRICES)
    heard: dict[str, list] = {"alone": [], "follower": []}
    cuts = _cut_from(at, seq, sim)
    off = sim.arm()
    alone = sim.arm(cuts, free=free, after=lambda k, req, u: heard["alone"].append((k, u)))
    follower = sim.arm(cuts, free=free, after=lambda k, req, u: heard["follower"].append((k, u)))
    follower.follow(off)
    taken = []
    for k in range(len(seq.requests)):
        follower.prepare(k)
        off.step(k)
        alone.step(k)
        rb = follower.step(k)
        taken.append(rb is off.bill.requests[k])
    assert follower.bill.requests == alone.bill.requests
    assert heard["follower"] == heard["alone"]
    state = follower if follower.leader is None else off  # (a follower to the end holds no cache of its own)
    assert state.cache.entries == alone.cache.entries and state.own == alone.own
    n = len(seq.requests)
    first_cut = next((k for k in range(n) if cuts(k, seq.requests[k])), n)
    assert taken == [k < first_cut for k in range(n)]  # the leader's bills until its first cut
    assert (follower.leader is None) == (first_cut < n)
    if first_cut < n:
        assert alone.bill.sim_cost != off.bill.sim_cost  # the cut changed something: the test can fail


def test_a_follower_must_be_prepared_before_its_leader_bills(tmp_path):
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=4)).sequences[0]
    sim = SequenceSimulator(seq, PRICES)
    off, follower = sim.arm(), sim.arm(lambda k, req: {})
    follower.follow(off)
    off.step(0)
    with pytest.raises(RuntimeError):
        follower.prepare(0)  # too late: the leader's state is past request 0
    with pytest.raises(ValueError):
        sim.arm(lambda k, req: {}).follow(sim.arm(lambda k, req: {}))  # only the unmodified arm leads
