"""One simulator arm: its own cache, billed request by request; the hooks other arms use."""

from __future__ import annotations

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
