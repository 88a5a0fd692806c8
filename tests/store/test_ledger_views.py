"""The identify stage's project and region sizes reach the ledger (real writer) and its readers."""

from __future__ import annotations

import json

from scalpel_desktop.paths import dirs
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.pipeline.record import build_row
from scalpel_desktop.exchange import ApiRequest, Exchange
from scalpel_desktop.store import ledger_queries as q
from scalpel_desktop.store import ledger_views as v
from scalpel_desktop.store.db import connect
from scalpel_desktop.store.ledger import LedgerWriter
from scalpel_desktop.tools.store import ToolStore

SID = "11111111-2222-4333-8444-555555555555"


def _exchange(home: str) -> Exchange:
    doc = {"model": "claude-sonnet-4-5-20250929",
           "system": [{"type": "text", "text": f" - Primary working directory: {home}/work/proj\n"}],
           "metadata": {"user_id": f"user_x_account__session_{SID}"},
           "tools": [{"name": "Read", "input_schema": {}}],
           "messages": [{"role": "user", "content": "SECRET-PROMPT-TEXT"}]}
    body = json.dumps(doc, separators=(",", ":")).encode()
    return Exchange(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", {}, body, 1_800_000_000.0))


def test_project_and_regions_are_recorded_without_content(isolated_home):
    ex = _exchange(str(isolated_home))
    ident = Identify()
    ident.on_request(ex)
    assert ex.regions is None  # measured after the answer, off the request path
    ident.on_response(ex)
    row = build_row(ex)
    assert row["project"] == "~/work/proj"
    regions = json.loads(row["regions"])
    assert set(regions) == {"system", "tools", "mcp_tools", "messages", "tool_results"}
    assert "SECRET-PROMPT-TEXT" not in json.dumps(row)
    row.update(session=SID, input_tokens=5, cache_write_5m=100, cache_write_1h=0, cache_read=900, output_tokens=1)
    w = LedgerWriter(dirs().database)
    assert w.submit(row) and w.flush(10)
    w.close()
    conn = q.open_readonly()
    try:
        assert v.session_projects(conn, [SID]) == {SID: "~/work/proj"}
        ctx = v.session_context(conn, SID)
        assert ctx.prompt == 1005 and ctx.regions == regions and ctx.dead_left is None
        assert q.match_sessions(conn, SID[:6]) == [SID] and q.match_sessions(conn, "nope") == []
        assert len(v.usage_rows(conn, None, 2e9, [SID])) == 1
    finally:
        conn.close()


def test_a_cut_names_the_file_its_call_read(isolated_home):
    from scalpel_desktop.store.cutlog import CutLog, CutRecord

    store = ToolStore.open()
    store.save_inventory(SID, "cli", "m", 1.0, None, [("toolu_1", "Read")], new_request=True,
                         targets={"toolu_1": "~/work/proj/a.py"})
    store.close()
    conn = connect()
    CutLog(conn).record(CutRecord("toolu_1", SID, "", 2.0, "superseded_read", 10, "a" * 64, 1, "b" * 64))
    conn.close()
    ro = q.open_readonly()
    try:
        [entry] = q.cut_entries(ro, session=SID)
        assert (entry.tool, entry.target) == ("Read", "~/work/proj/a.py")
    finally:
        ro.close()


def test_usage_rows_are_requests_never_count_tokens_calls():
    w = LedgerWriter(dirs().database)
    for endpoint in ("messages", "count_tokens", "messages"):
        assert w.submit({"ts": 100.0, "session": SID, "endpoint": endpoint, "input_tokens": 7, "cache_read": 0,
                         "output_tokens": 1})
    assert w.flush(10)
    w.close()
    conn = q.open_readonly()
    try:
        assert len(v.usage_rows(conn, None, 2e9)) == 2 and len(v.usage_rows(conn, 50.0, 2e9, [SID])) == 2
    finally:
        conn.close()
