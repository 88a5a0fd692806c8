"""The tool filter stage: pinned per session, fail-open, realized savings after the response."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.config import Config
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.tools.inventory_stage import InventoryStage
from scalpel_desktop.exchange import ResponseResult
from scalpel_desktop.tools.filter_stage import ToolFilterStage, tool_stages
from scalpel_desktop.tools import removals
from scalpel_desktop.tools.store import ToolStore
from scalpel_desktop.wire.jsoncodec import dumps, loads
from tests.tools.bodies import CC_TOOLS, body, request, tool


class Flag:
    def __init__(self, on: bool):
        self.on = on

    def __call__(self) -> bool:
        return self.on


def make(tmp_path, on=True, prices=None):
    store = ToolStore.open(tmp_path / "ledger.sqlite3")
    flag = Flag(on)
    stage = ToolFilterStage(store, flag, prices=prices)
    return store, flag, stage, Chain([Identify(), stage])


def sent_tools(ex) -> bytes:
    return dumps(loads(ex.body_to_send())["tools"])


def test_filters_and_keeps_the_rest_byte_for_byte(tmp_path):
    store, flag, stage, chain = make(tmp_path)
    removals.remove(store, "ReportFindings", source="cli", force=True)
    doc = body([tool(n) for n in CC_TOOLS], session="s1")
    ex = chain.process(request(doc))
    assert ex.changed and ex.decision.label == "filtered"
    sent = loads(ex.body_to_send())
    assert [t["name"] for t in sent["tools"]] == [n for n in CC_TOOLS if n != "ReportFindings"]
    expected = copy.deepcopy(doc)
    expected["tools"] = [t for t in expected["tools"] if t["name"] != "ReportFindings"]
    assert ex.body_to_send() == dumps(expected)
    assert ex.decision.tokens_removed == ex.decision.figures["tool_filter_tokens"] > 0


def test_nothing_pinned_means_original_bytes(tmp_path):
    store, flag, stage, chain = make(tmp_path, on=False)
    removals.remove(store, "ReportFindings", source="cli", force=True)
    raw = dumps(body([tool(n) for n in CC_TOOLS], session="s-off"))
    ex = chain.process(request(None, raw=raw))
    assert not ex.changed and ex.body_to_send() is raw


def test_body_that_does_not_round_trip_is_left_alone(tmp_path):
    store, flag, stage, chain = make(tmp_path)
    removals.remove(store, "ReportFindings", source="cli", force=True)
    raw = dumps(body([tool(n) for n in CC_TOOLS], session="s-ws")).replace(b'{"model"', b'{ "model"', 1)
    ex = chain.process(request(None, raw=raw))
    assert not ex.changed and ex.body_to_send() is raw
    assert ex.tool_filter.left_alone.startswith("body does not round-trip")


def test_with_parse_reuse_in_front_a_body_off_the_codec_is_still_left_alone(tmp_path):
    """The shipped order (parse-reuse first) proves the messages from its layout and
    re-serializes only the rest: a byte off outside the messages must still be caught."""
    from scalpel_desktop.pipeline.parse_reuse import ParseReuse

    store, flag, stage, _ = make(tmp_path)
    chain = Chain([ParseReuse(min_bytes=0), Identify(), stage])
    removals.remove(store, "ReportFindings", source="cli", force=True)
    # The conversation's first request is laid out after its response; the next one reuses it.
    first = chain.process(request(None, raw=dumps(body([tool(n) for n in CC_TOOLS], session="s-layout"))))
    chain.complete(first, ResponseResult(200, None, 1, 1, 2))
    good = dumps(body([tool(n) for n in CC_TOOLS], session="s-layout", turns=1))
    ex = chain.process(request(None, raw=good))
    assert ex.layout is not None  # the layout path really ran
    assert ex.changed
    bad = good[:-1] + b' }'  # off the codec after the messages: parse-reuse still lays them out
    ex = chain.process(request(None, raw=bad))
    assert ex.layout is not None
    assert not ex.changed and ex.body_to_send() is bad

def test_pinned_per_session_across_config_change_and_restart(tmp_path):
    store, flag, stage, chain = make(tmp_path)
    removals.remove(store, "Workflow", source="cli", force=True)
    s1 = [body([tool(n) for n in CC_TOOLS], session="A", turns=t) for t in range(4)]
    first = chain.process(request(s1[0]))
    assert b'"Workflow"' not in sent_tools(first)

    # The user changes the list and turns the filter off: session A keeps its pinned set.
    removals.remove(store, "ReportFindings", source="cli", force=True)
    removals.restore(store, "Workflow", source="cli")
    flag.on = False
    second = chain.process(request(s1[1]))
    assert sent_tools(second) == sent_tools(first)

    # A new session started now follows the new switch (off): nothing removed.
    other = chain.process(request(body([tool(n) for n in CC_TOOLS], session="B")))
    assert not other.changed

    # Proxy restart: a new store and stage on the same database, the switch back on.
    store2 = ToolStore.open(tmp_path / "ledger.sqlite3")
    chain2 = Chain([Identify(), ToolFilterStage(store2, Flag(True))])
    third = chain2.process(request(s1[2]))
    assert sent_tools(third) == sent_tools(first)
    # ... and session B stays unfiltered, while a brand-new session C gets the new list.
    assert not chain2.process(request(body([tool(n) for n in CC_TOOLS], session="B", turns=1))).changed
    c = chain2.process(request(body([tool(n) for n in CC_TOOLS], session="C")))
    names = [t["name"] for t in loads(c.body_to_send())["tools"]]
    assert "ReportFindings" not in names and "Workflow" in names


def test_a_session_first_seen_mid_conversation_is_not_filtered(tmp_path):
    store, flag, stage, chain = make(tmp_path)
    removals.remove(store, "ReportFindings", source="cli", force=True)
    ex = chain.process(request(body([tool(n) for n in CC_TOOLS], session="late", turns=3)))
    assert not ex.changed
    assert stage.pins.worker.flush(30)  # an empty pin is answered at once and stored off the path
    assert store.get_pin("late").names == frozenset()


def test_realized_savings_priced_at_the_billed_tier(tmp_path):
    from scalpel_desktop.accounting.prices import PriceTable

    prices = PriceTable.load()
    store, flag, stage, chain = make(tmp_path, prices=prices)
    removals.remove(store, "ReportFindings", source="cli", force=True)
    removals.remove(store, "Workflow", source="cli", force=True)
    doc = body([tool(n) for n in CC_TOOLS], session="R")
    rates = prices.rates(doc["model"])
    cases = [
        (Usage(input_tokens=3, cache_write_5m=0, cache_write_1h=0, cache_read=5000, output_tokens=10), "cache_read"),
        (Usage(input_tokens=3, cache_write_5m=5000, cache_write_1h=0, cache_read=0, output_tokens=10), "write_5m"),
        (Usage(input_tokens=3, cache_write_5m=100, cache_write_1h=4000, cache_read=0, output_tokens=10), "write_1h"),
        (Usage(input_tokens=900, cache_write_5m=0, cache_write_1h=0, cache_read=0, output_tokens=10), "input"),
    ]
    for i, (usage, tier) in enumerate(cases):
        ex = chain.process(request(body([tool(n) for n in CC_TOOLS], session="R", turns=0)))
        removed = len(ex.request.body) - len(ex.body_to_send())
        chain.complete(ex, ResponseResult(200, usage, 10.0, 20.0, 1_800_000_100.0 + i))
        (real,) = ex.realized
        # the bytes not sent x this request's own tokens per byte (no calibration stage here)
        per_byte = usage.prompt_tokens / len(ex.body_to_send())
        assert real.kind == "tool_filter" and removed > 0
        assert abs(real.tokens - removed * per_byte) <= len(ex.tool_filter.removed)  # rounded per declaration
        assert abs(real.usd - real.tokens * getattr(rates, tier)) < 1e-12
        assert real.provenance["tokens"] == "own_request" and real.provenance["bytes"] == removed
        assert ex.tool_filter.realized["tier"] == tier
    # a failed request saved nothing
    ex = chain.process(request(body([tool(n) for n in CC_TOOLS], session="R")))
    chain.complete(ex, ResponseResult(529, None, 1.0, 2.0, 1_800_000_200.0))
    assert ex.realized == []
    stage.writer.flush()
    rows = store.query("SELECT tier, COUNT(*), SUM(tokens) FROM tool_filter_savings GROUP BY tier ORDER BY tier")
    assert [r[0] for r in rows] == ["cache_read", "input", "write_1h", "write_5m"]
    assert all(r[1] == 2 for r in rows)  # two names per request


def test_realized_and_projected_are_separate_fields(tmp_path):
    from scalpel_desktop.tools.listing import inventory_listing
    from scalpel_desktop.tools.suggest import build_report

    store, flag, stage, chain = make(tmp_path)
    removals.remove(store, "ReportFindings", source="cli", force=True)
    ex = chain.process(request(body([tool(n) for n in CC_TOOLS], session="P")))
    chain.complete(ex, ResponseResult(200, Usage(1, 0, 0, 4000, 5), 1.0, 2.0, 1_800_000_000.0))
    stage.writer.flush()
    listing = inventory_listing(store, Config({"tool_filter": True}))
    assert listing["realized"]["tokens"] == ex.realized[0].tokens > 0
    assert "projected" not in listing["realized"]
    report = build_report(store)
    assert "realized" not in str(report["suggestions"])


def test_stage_fails_open_inside_the_chain(tmp_path):
    store, flag, stage, chain = make(tmp_path)
    removals.remove(store, "ReportFindings", source="cli", force=True)
    store.close()  # every database access now raises
    raw = dumps(body([tool(n) for n in CC_TOOLS], session="broken"))
    ex = chain.process(request(None, raw=raw))
    assert ex.body_to_send() is raw and ex.decision.action == "error"


def test_tool_stages_factory_builds_both_stages(tmp_path):
    inventory, tf = tool_stages(Config({"tool_filter": True}), db_path=tmp_path / "x.sqlite3")
    assert isinstance(inventory, InventoryStage) and tf.mutates and not inventory.mutates
    assert inventory.writer is tf.writer


# -- the property: tools sent = f(declared tools, pinned set) ---------------------------------

NAME_POOL = CC_TOOLS + ["mcp__gh__issue", "mcp__gh__pr", "mcp__slack__post", "Grep", "Glob"]
REMOVAL_POOL = NAME_POOL + ["mcp__gh", "mcp__slack", "skill__dataviz", "skill__code-review"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    declared=st.lists(st.sampled_from(NAME_POOL), min_size=1, max_size=len(NAME_POOL), unique=True),
    pinned=st.sets(st.sampled_from(REMOVAL_POOL), max_size=6),
    turns=st.lists(st.integers(min_value=0, max_value=6), min_size=2, max_size=4),
    session=st.uuids(),
)
def test_tools_sent_are_a_pure_function_of_declared_and_pinned(tmp_path, declared, pinned, turns, session):
    import tempfile
    from pathlib import Path

    db = Path(tempfile.mkdtemp(dir=tmp_path)) / "ledger.sqlite3"  # a fresh database per example
    store = ToolStore.open(db)
    for n in pinned:
        store.add_removal(n, "cli", forced=False)
    sid = str(session)
    tools = [tool(n) for n in declared]
    chain = Chain([Identify(), ToolFilterStage(store, Flag(True))])
    outputs = []
    # The histories call a tool that is never pinned: a pending call to a pinned name is the one
    # documented exception (that request is forwarded untouched; see test_filter.py).
    bodies = [body(tools, session=sid, turns=0)] + [body(tools, session=sid, turns=t, calls=["Unpinned"]) for t in turns]
    for b in bodies[:2]:
        outputs.append(sent_tools(chain.process(request(b))))
    # config change: list emptied and the filter switched off
    for n in pinned:
        store.drop_removal(n, "cli")
    outputs.append(sent_tools(chain.process(request(bodies[2 % len(bodies)]))))
    # restart: a fresh stage on the same database
    chain2 = Chain([Identify(), ToolFilterStage(ToolStore.open(db), Flag(False))])
    for b in bodies[1:]:
        outputs.append(sent_tools(chain2.process(request(b))))
    assert len(set(outputs)) == 1
    # and it is exactly the declared tools minus the pinned ones (with the kept-anyway rules)
    from scalpel_desktop.tools.filter import filter_request

    expect = filter_request(bodies[0], frozenset(pinned)).doc["tools"]
    assert outputs[0] == dumps(expect)
