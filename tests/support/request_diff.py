"""Where consecutive requests of one conversation differ, where the emulator's read stopped,
and what the proxy's ledger says about each request: the three facts of
docs/claude-code-breaks.md, computed from the emulator's record of the bodies it received.

* ``first_difference(prev, cur)`` - the first place in prefix order (tools ->
  system -> messages) where ``cur`` stops repeating ``prev``. Cache markers are
  not part of the cached content and a string content equals the one text block
  it becomes, so both are ignored; the previous last message is compared like
  any other (Claude Code re-sends it unchanged, apart from its marker). ``None``
  means a pure append.
* ``read_stop(body, cache_read)`` - the block the emulator's cache read ended on
  (its ``cache_read_input_tokens`` counted over the body's blocks, by the
  emulator's own token rule), as a region and index.
* ``ledger_rows()`` / ``pair_rows(records, rows)`` - the proxy's ledger rows, each
  matched to the emulator record of the same request (the bytes it forwarded).
* ``main_requests(records)`` - the main conversation's billed requests, without
  side requests (titles, safety checks) and subagents.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scalpel_desktop.accounting.prefix_blocks import request_blocks
from scalpel_desktop.emulator.script import is_side_request
from scalpel_desktop.wire.jsoncodec import dumps


@dataclass(frozen=True)
class Difference:
    region: str  # tools | system | settings | messages
    index: int  # tool / system block / message index (-1 for settings)
    detail: str

    def __str__(self) -> str:
        return f"{self.region}[{self.index}]: {self.detail}"


@dataclass(frozen=True)
class ReadStop:
    region: str  # none | tools | system | messages
    index: int  # message index (messages), block index (tools / system); -1 for none
    block: int  # block index within the message (messages), else -1
    tokens: int  # cache_read_input_tokens

    def __str__(self) -> str:
        if self.region == "none":
            return "nothing read"
        if self.region == "messages":
            return f"messages[{self.index}] block {self.block} ({self.tokens} tokens)"
        return f"{self.region}[{self.index}] ({self.tokens} tokens)"


def _strip(v: Any) -> Any:
    """``v`` without cache markers; a string content as its text block."""
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if k != "cache_control"}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


def _content(msg: Any) -> Any:
    if isinstance(msg, dict):
        c = msg.get("content")
        if isinstance(c, str):
            return {**_strip(msg), "content": [{"type": "text", "text": c}]}
        return _strip(msg)
    return msg


def _blocks(v: Any) -> list:
    if isinstance(v, str):
        return [{"type": "text", "text": v}]
    return list(v) if isinstance(v, list) else []


def _short(v: Any, n: int = 90) -> str:
    s = dumps(v).decode() if not isinstance(v, str) else v
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[: n - 3] + "..."


def _message_detail(a: Any, b: Any) -> str:
    if not isinstance(a, dict) or not isinstance(b, dict):
        return f"{_short(a, 60)} -> {_short(b, 60)}"
    if a.get("role") != b.get("role"):
        return f"role {a.get('role')} -> {b.get('role')}"
    ca, cb = _blocks(a.get("content")), _blocks(b.get("content"))
    for k in range(min(len(ca), len(cb))):
        if _strip(ca[k]) != _strip(cb[k]):
            return f"{a.get('role')} block {k}: {_short(_strip(ca[k]), 70)} -> {_short(_strip(cb[k]), 70)}"
    if len(ca) != len(cb):
        return f"{a.get('role')}: {len(ca)} -> {len(cb)} blocks"
    return f"{a.get('role')}: other keys changed"


def first_difference(prev: Mapping[str, Any], cur: Mapping[str, Any]) -> Difference | None:
    """The first place ``cur`` stops repeating ``prev`` (see the module docstring)."""
    tp, tc = [_strip(t) for t in prev.get("tools") or []], [_strip(t) for t in cur.get("tools") or []]
    if tp != tc:
        for i in range(max(len(tp), len(tc))):
            a = tp[i] if i < len(tp) else None
            b = tc[i] if i < len(tc) else None
            if a != b:
                na = a.get("name") if isinstance(a, dict) else None
                nb = b.get("name") if isinstance(b, dict) else None
                what = f"{na} -> {nb}" if na != nb else f"{na} changed"
                return Difference("tools", i, f"{len(tp)} -> {len(tc)} tools; at {i}: {what}")
    sp, sc = [_strip(b) for b in _blocks(prev.get("system"))], [_strip(b) for b in _blocks(cur.get("system"))]
    if sp != sc:
        for i in range(max(len(sp), len(sc))):
            a = sp[i] if i < len(sp) else None
            b = sc[i] if i < len(sc) else None
            if a != b:
                return Difference("system", i, f"{_short(a, 70)} -> {_short(b, 70)}")
    for key in ("tool_choice", "thinking"):
        if prev.get(key) != cur.get(key):
            return Difference("settings", -1, f"{key}: {_short(prev.get(key), 40)} -> {_short(cur.get(key), 40)}")
    return first_message_difference(prev, cur)


def first_message_difference(prev: Mapping[str, Any], cur: Mapping[str, Any]) -> Difference | None:
    """The first message of ``cur`` that does not repeat ``prev`` (whatever tools or system did)."""
    mp, mc = prev.get("messages") or [], cur.get("messages") or []
    for i in range(min(len(mp), len(mc))):
        if _content(mp[i]) != _content(mc[i]):
            return Difference("messages", i, _message_detail(mp[i], mc[i]))
    if len(mc) < len(mp):
        return Difference("messages", len(mc), f"history shortened {len(mp)} -> {len(mc)} messages")
    return None


def read_stop(body: Mapping[str, Any], cache_read: int) -> ReadStop:
    """The block on which a read of ``cache_read`` tokens ended, by the emulator's token rule."""
    if not cache_read:
        return ReadStop("none", -1, -1, 0)
    where: list[tuple[str, int, int]] = []
    for i, t in enumerate(body.get("tools") or []):
        if not (isinstance(t, Mapping) and t.get("defer_loading") is True):
            where.append(("tools", i, -1))
    where += [("system", i, -1) for i in range(len(_blocks(body.get("system"))))]
    for i, m in enumerate(body.get("messages") or []):
        if isinstance(m, Mapping):
            c = m.get("content")
            n = 1 if isinstance(c, str) else len(c) if isinstance(c, list) else (1 if c is not None else 0)
            where += [("messages", i, k) for k in range(n)]
    blocks = request_blocks(body)
    assert len(blocks) == len(where), (len(blocks), len(where))
    total = 0
    for j, b in enumerate(blocks):
        total += b.tokens
        if total == cache_read:
            region, index, block = where[j]
            return ReadStop(region, index, block, cache_read)
    raise AssertionError(f"cache_read {cache_read} ends inside no block boundary (total {total})")


def is_main(rec: Any) -> bool:
    """A billed request of the main conversation: no subagent, no side request."""
    if rec.endpoint != "messages" or rec.usage is None or rec.status != 200:
        return False
    if rec.headers.get("x-claude-code-agent-id"):
        return False
    return not is_side_request(rec.json())


def main_requests(records: Iterable[Any]) -> list[Any]:
    return [r for r in records if is_main(r)]


def ledger_rows(db_path: Any = None) -> list[dict[str, Any]]:
    """Every ledger row (``figures`` parsed), oldest first."""
    if db_path is None:
        from scalpel_desktop.paths import dirs

        db_path = dirs().database
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute("SELECT * FROM requests ORDER BY ts, id")]
    finally:
        conn.close()
    for r in rows:
        r["figures"] = json.loads(r["figures"]) if r.get("figures") else {}
    return rows


def pair_rows(records: Sequence[Any], rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any] | None]:
    """For each emulator record, the ledger row of the same request: same endpoint and the
    bytes the proxy sent, the same usage where the row has one; the oldest unused such row.
    None where the proxy wrote no row (a stream the client abandoned may have none)."""
    used: set[int] = set()
    out: list[Mapping[str, Any] | None] = []
    for rec in records:
        u = rec.usage
        found = None
        for k, row in enumerate(rows):
            if k in used or row["endpoint"] != rec.endpoint or row["sent_bytes"] != len(rec.body):
                continue
            if u is not None and row["cache_read"] is not None and row["cache_read"] != u.cache_read:
                continue
            found = k
            break
        if found is not None:
            used.add(found)
        out.append(rows[found] if found is not None else None)
    return out


@dataclass(frozen=True)
class Step:
    """One request of the conversation with the three facts."""

    n: int  # position in the conversation
    messages: int
    diff: Difference | None  # against the previous request (None: pure append / first)
    msg_diff: Difference | None  # the first differing message, whatever tools / system did
    brk: int | None  # the economist's break (ledger figures)
    reason: str | None
    read: ReadStop
    prompt_tokens: int

    def __str__(self) -> str:
        extra = f" (messages from {self.msg_diff.index})" if self.diff and self.msg_diff and self.diff.region != "messages" else ""
        return (f"#{self.n} msgs={self.messages} diff={self.diff or 'append'}{extra} | break={self.brk} ({self.reason})"
                f" | read stops at {self.read} of {self.prompt_tokens}")


def steps(records: Sequence[Any], rows: Sequence[Mapping[str, Any]] | None = None) -> list[Step]:
    """The three facts for each of ``records`` (one conversation, in order)."""
    paired = pair_rows(records, rows) if rows is not None else [None] * len(records)
    out = []
    prev = None
    for n, (rec, row) in enumerate(zip(records, paired)):
        body = rec.json()
        diff = first_difference(prev, body) if prev is not None else None
        msg_diff = first_message_difference(prev, body) if prev is not None else None
        fig = (row or {}).get("figures") or {}
        out.append(Step(n, len(body.get("messages") or []), diff, msg_diff, fig.get("break"), fig.get("break_reason"),
                        read_stop(body, rec.usage.cache_read), rec.usage.prompt_tokens))
        prev = body
    return out
