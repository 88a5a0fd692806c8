"""surgery/warm_bound.py: when the bound says no warm cut of a never-seen conversation can pay,
the economist's own plan, made with the full analysis, never cuts; and the bound is not vacuous."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.accounting.tokens import estimate_tokens_bytes
from scalpel_desktop.exchange import ApiRequest
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.store.db import connect
from scalpel_desktop.surgery.remaining import History
from scalpel_desktop.surgery.stage import build_surgery_stage
from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.surgery.warm_bound import no_warm_cut_pays
from scalpel_desktop.wire.cache_rules import message_ttl_s
from scalpel_desktop.wire.jsoncodec import dumps, loads
from scalpel_desktop.wire.skeleton import read_skeleton

SID = "00000000-0000-4000-8000-0000000000b3"
HEADERS = {"anthropic-version": "2023-06-01", "x-claude-code-session-id": SID}
MODEL = "claude-opus-4-5"


def _usual(tmp, policy: str):
    """The full path on the request (nothing deferred), with a ledger saying conversations go on long."""
    stage = build_surgery_stage({"policy": policy, "tier": 2, "write_wait_ms": 5000}, connect(tmp / "l.db"),
                                tmp / "spill", PriceTable.builtin())
    stage.defer_first_sightings = False
    stage.economist.history = History.of([400] * 20)
    chain = Chain([Identify(), stage])
    chain.lane_min_bytes = None
    return chain, stage


def _bound(stage, body: bytes) -> bool:
    skel = read_skeleton(HEADERS, body)
    ttl = message_ttl_s("messages", loads(body))
    return no_warm_cut_pays(stage.economist._rates(MODEL), ttl, skel, estimate_tokens_bytes(len(body)))


def _first_sighting_cuts(chain, body: bytes) -> bool:
    ex = chain.process(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", HEADERS, body, 1000.0))
    return "cut" in ex.decision.changes


_step = st.tuples(st.sampled_from(["read", "reread", "edit", "talk"]), st.integers(0, 3), st.integers(5, 2500))


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(_step, min_size=2, max_size=14), policy=st.sampled_from(["death", "payback"]),
       ttl=st.sampled_from([None, "1h"]))
def test_where_the_bound_rules_a_cut_out_the_full_plan_never_cuts(tmp_path_factory, steps, policy, ttl):
    s = SessionBuilder(session_id=SID, ttl=ttl)
    for kind, f, lines in steps:
        path = f"/home/user/proj/f{f}.py"
        if kind in ("read", "reread"):
            s.call("Read", {"file_path": path}, file_text(path, lines, salt=kind))
        elif kind == "edit":
            s.call("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, "updated")
        else:
            s.text("x" * lines)
            s.user("go on")
    body = dumps(s.body(model=MODEL))
    chain, stage = _usual(tmp_path_factory.mktemp("b"), policy)
    if _bound(stage, body):
        assert not _first_sighting_cuts(chain, body)


def test_a_prompt_that_is_mostly_one_file_read_again_and_again_is_left_to_the_plan(tmp_path):
    """A status file polled sixty times: all but the last few reads are superseded, over 92% of the
    prompt. The bound cannot rule the cut out, and the plan does make it, on the first sighting."""
    s = SessionBuilder(session_id=SID)
    for i in range(60):
        s.call("Read", {"file_path": "/home/user/proj/status.txt"}, "".join(f"poll {i} step {j} ok; " for j in range(1000)))
    s.user("and now?")
    body = dumps(s.body(model=MODEL))
    chain, stage = _usual(tmp_path, "death")
    assert not _bound(stage, body)
    assert _first_sighting_cuts(chain, body)


def test_a_conversation_of_many_small_results_is_ruled_out(tmp_path):
    s = SessionBuilder(session_id=SID)
    for i in range(40):
        s.text("thinking about step %d " % i * 20)
        s.call("Bash", {"command": f"ls /tmp/{i}"}, f"file{i}.txt")
    s.user("next")
    body = dumps(s.body(model=MODEL))
    chain, stage = _usual(tmp_path, "death")
    assert _bound(stage, body) and not _first_sighting_cuts(chain, body)
