"""Drive the SHIPPED surgery stage with a transcript's requests, as the proxy would.

Every stage arm of one sequence (``cold``, ``payback``, each with and without
the client-break hint) sees the same request bodies, so they are built once per
sequence (:class:`SequenceBodies`): the bytes, the parsed document (handed to
the stage as the proxy's parse-reuse would: messages shared with the previous
request are the very same objects, so the stage's view is incremental) and
the doom analysis of each body (a pure function of its content, the tier and
the config), memoised for every arm and for the bench's own ``naive`` and
``ceiling`` arms. So are its layout (``ex.layout``, as parse-reuse hands it
over), its request shape and the verdicts on its rewrites
(``bench/shared_stage.py``); ``share=False`` gives every arm its own.

The hint: where a request's real usage shows the cache read stopping short of
the previous request's whole prompt, the client (or the provider) broke the
cache there; the live proxy should see such rewrites in the bytes, a
transcript does not show them, so the stage is told the message index
(``client_rewrite_at``) in the ``hinted`` arms. The headline arms run without
it: their saving needs no break inferred from the usage.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scalpel_desktop.accounting.tokens import estimate_tokens_bytes
from scalpel_desktop.surgery.stage import SurgeryStage
from scalpel_desktop.bench.client_markers import layout_for, mark_last_block, system_blocks
from scalpel_desktop.bench.shared_stage import SharedBodyStage
from scalpel_desktop.wire.jsoncodec import loads
from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.bench.reader import Request, Sequence
from scalpel_desktop.bench.simulate import SequenceSimulator, Stub


class SequenceBodies:
    """The request bodies of one sequence as Claude Code would send them, built once."""

    def __init__(self, seq: Sequence, config: Any, tier: int, share: bool = True, markers: Any = None):
        self.seq = seq
        # the client's marker layout (``markers``: another one, for tests of what needs append-only bytes)
        self.markers = markers or layout_for(seq.requests[0].version if seq.requests else "")
        self.share = share  # False: each stage arm lays out, shapes and validates every body itself
        self.config = config
        self.tier = tier
        self._msgs: dict[tuple, dict] = {}
        self._msg_bytes: dict[int, tuple[dict, bytes]] = {}  # id(message) -> (it, its bytes): see _bytes
        self._docs: dict[int, tuple[bytes, dict]] = {}
        self._spans: dict[int, list] = {}
        self._layouts: dict[int, Any] = {}
        self._hints: list[int | None] | None = None
        self._last: tuple | None = None  # (history, its messages, where its last message starts)
        self.shapes: dict[bool, tuple] = {}  # warm? -> (doc, body, its RequestShape): see SharedBodyStage
        self.verdicts: dict = {}  # rewritten body -> (verdict, what the API check learnt)
        self._view = None  # the previous original body's view (its analysis is shared where messages are)
        self._ttl: list[str | None] = []
        ttl = None
        for req in seq.requests:
            u = req.usage
            if u.cache_write_1h > 0:
                ttl = "1h"
            elif u.cache_write_5m > 0:
                ttl = "5m"
            self._ttl.append(ttl)

    def doc(self, k: int) -> tuple[bytes, dict]:
        got = self._docs.get(k)
        if got is not None:
            return got
        req = self.seq.requests[k]
        marker: dict[str, Any] = {"type": "ephemeral"}
        if self._ttl[k] == "1h":
            marker["ttl"] = "1h"
        msgs = self._messages(req)
        # The client's own markers (bench/client_markers.py): the stage sees the marker budget
        # it would see on the wire, so it pins only where the client leaves a marker free.
        lay = self.markers
        if msgs:
            msgs[-1] = mark_last_block(msgs[-1], marker)
            if lay.previous_message and len(msgs) > 1:
                msgs[-2] = mark_last_block(msgs[-2], marker)
        doc = {
            "model": req.model,
            "max_tokens": 32000,
            "system": system_blocks(lay, marker),
            "messages": msgs,
            "metadata": {"user_id": json.dumps({"session_id": self.seq.session_id})},
            "stream": True,
        }
        got = self._docs[k] = (self._bytes(doc), doc)
        if k >= 2:  # the arms step in lockstep
            self._docs.pop(k - 2, None)
            self._spans.pop(k - 2, None)
            self._layouts.pop(k - 2, None)
        return got

    def _bytes(self, doc: dict) -> bytes:
        """``dumps(doc)``, each message serialized once for the sequence: the messages shared
        with earlier requests are the same objects (``_messages``), and a compact list is
        its items' bytes joined by commas (tests/bench/test_stage_driver.py checks the bytes)."""
        from scalpel_desktop.wire.jsoncodec import dumps

        head, mark, tail = dumps(dict(doc, messages=0)).partition(b'"messages":0')  # (a key: never in a string)
        if not mark:
            return dumps(doc)
        cache = self._msg_bytes
        msgs = doc["messages"]
        parts = []
        own = min(len(msgs), 2 if self.markers.previous_message else 1)  # this request's marked copies
        for m in msgs[:len(msgs) - own]:
            got = cache.get(id(m))
            if got is None or got[0] is not m:
                got = cache[id(m)] = (m, dumps(m))  # (held: its id stays its own)
            parts.append(got[1])
        parts.extend(dumps(m) for m in msgs[len(msgs) - own:])
        return b"".join((head, b'"messages":[', b",".join(parts), b"]", tail))

    def ttl(self, k: int) -> str | None:  # the TTL request k's markers ask for (from its usage; None: none yet)
        return self._ttl[k]

    def hints(self, sim: SequenceSimulator) -> list[int | None]:
        """The hinted arms' break of every request (``rewrite_hints``), found once."""
        if self._hints is None:
            self._hints = rewrite_hints(sim)
        return self._hints

    def hint(self, k: int, sim: SequenceSimulator) -> int | None:
        return self.hints(sim)[k]

    def layout(self, k: int) -> tuple[Any, bytes | None]:
        """(layout of request ``k``'s body, the previous body it re-used): found once for every
        arm, as the proxy's parse-reuse hands it to the stage (``ex.layout``, ``ex.layout_base``)."""
        got = self._layouts.get(k)
        if got is None:
            from scalpel_desktop.wire.layout import LaidOutBody, locate

            body, doc = self.doc(k)
            prev = self._layouts.get(k - 1) if k > 0 else None
            base = self._docs[k - 1][0] if prev is not None and prev[0] is not None and k - 1 in self._docs else None
            layout = locate(body, doc, LaidOutBody(base, prev[0]) if base is not None else None)
            got = self._layouts[k] = (layout, base if layout is not None and layout.reused else None)
        return got

    def _messages(self, req: Request) -> list[dict]:
        """Consecutive same-role lines merged into one message; a message of the same
        lines is the same object in every request (never mutated). A history that extends
        the previous request's keeps its messages but the last, which may grow."""
        hist = req.history
        out: list[dict] = []
        start = 0
        prev = self._last
        if prev is not None:
            ph, pout, pstart = prev
            if pout and len(ph) <= len(hist) and all(a is b for a, b in zip(ph, hist)):
                out, start = pout[:-1], pstart
        last_start = start
        group: list = []
        for i in range(start, len(hist) + 1):
            ln = hist[i] if i < len(hist) else None
            if group and (ln is None or ln.role != group[0].role):
                key = tuple(id(x) for x in group)
                m = self._msgs.get(key)
                if m is None:
                    m = self._msgs[key] = {"role": group[0].role, "content": [b for x in group for b in x.blocks]}
                out.append(m)
                last_start = i - len(group)
                group = []
            if ln is not None:
                group.append(ln)
        self._last = (hist, list(out), last_start)
        return out

    def spans(self, k: int) -> list:
        """The doom spans of request ``k``'s body as sent by the client (before any arm's stubs)."""
        got = self._spans.get(k)
        if got is None:
            from scalpel_desktop.surgery.doom import find_doom_spans
            from scalpel_desktop.wire.formats import view_for

            view = view_for("messages", self.doc(k)[1], previous=self._view)
            self._view = view
            got = self._spans[k] = find_doom_spans(view, self.config, tier=self.tier) if view is not None else []
        return got


class StageDriver:
    """Runs one sequence's requests through a private SurgeryStage."""

    def __init__(self, seq: Sequence, policy: str, tier: int, prices, config: Mapping[str, Any] | None,
                 sim: SequenceSimulator, bodies: SequenceBodies, hints: bool = False, scratch: str | None = None,
                 history: Any = None, budget: Any = None):
        from scalpel_desktop.store.spill import SpillStore
        from scalpel_desktop.store.cutlog import CutLog
        from scalpel_desktop.surgery.economist import Economist

        self.seq = seq
        # spill files are content-addressed: the arms of a replay may share one scratch dir
        self.own_tmp = scratch is None
        self.tmp = scratch if scratch is not None else tempfile.mkdtemp(prefix="scalpel-bench-")
        cfg = dict(config or {})
        cfg["policy"], cfg["tier"] = policy, tier  # after the defaults, or every arm would run "cold"
        self.sim, self.bodies, self.hints = sim, bodies, hints
        self.conn = _fresh_log_db()  # the surgery log of this replay only
        # durable=False: a replay's spill files are scratch (deleted below), never a real cut's
        kind = SharedBodyStage if bodies.share else SurgeryStage
        self.stage = kind(cfg, SpillStore(Path(self.tmp) / "spill", durable=False), CutLog(self.conn, empty=True),
                          Economist(cfg, prices, history, budget), prices)
        if bodies.share:
            self.stage.shapes, self.stage.verdicts = bodies.shapes, bodies.verdicts
        self.stage.find_spans = self._spans
        self.stub = sim.stub_tokens(_stub_bytes())
        self.cuts: dict[str, Stub] = {}
        self.pins: dict[int, dict[int, str | None]] = {}  # request -> sim.sent_marks of its pinned body
        self.warm: list[dict] = []  # every warm cut: the request, its plan's figures (tests, bench --json)
        self.breaks: dict[int, str] = {}  # request -> its natural break's reason (a bet's outcome ends at a cold one)
        self._ex = None
        self._k = 0
        self._key = None  # the sequence's conversation key: the same for every request of it
        self.headers = {"x-claude-code-session-id": seq.session_id}
        if seq.kind != "main" and seq.agent_id:
            self.headers["x-claude-code-agent-id"] = seq.agent_id

    def _spans(self, view, config=None, tier=None) -> list:
        """The body's doom spans but those this arm's stubs already replaced (as its own view finds them)."""
        done = view.replaced
        return [s for s in self.bodies.spans(self._k) if s.tool_use_id not in done]

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            if self.own_tmp:
                shutil.rmtree(self.tmp, ignore_errors=True)

    def cuts_for(self, k: int, req: Request) -> dict[str, Stub]:
        from scalpel_desktop.exchange import ApiRequest, Exchange

        body, doc = self.bodies.doc(k)
        api = ApiRequest("POST", "/v1/messages", "beta=true", "anthropic", "messages", self.headers, body, req.ts)
        ex = Exchange(api, model=req.model)
        ex.set_doc(doc)
        # The prompt's size as the proxy would estimate it from the whole body (pipeline/identify.py),
        # the system prompt and tools included: the transcript holds neither, so their tokens are
        # the sequence's own, measured from its first request's usage (``sim.prefix_tokens``).
        # Without them the stage priced a worst case without the system prompt and refused cuts as
        # leaving "under the minimum cacheable size" a prompt that was thousands of tokens over it.
        ex.tokens_before = estimate_tokens_bytes(len(body)) + self.sim.prefix_tokens
        if self.bodies.share:
            ex.layout, ex.layout_base = self.bodies.layout(k)
        if self._key is None:
            from scalpel_desktop.wire.identity import conversation_key

            self._key = conversation_key(self.headers, doc)
        ex.key = self._key
        hint = self.bodies.hint(k, self.sim) if self.hints else None
        if hint is not None:
            ex.client_rewrite_at = hint
        self._k = k
        self.stage.on_request(ex)
        self._ex = ex
        sent = ex.surgery
        cuts: dict[str, Stub] = {}
        if sent is not None:
            for tid, _pos, _saved, _kind in sent.stubs:
                cuts[tid] = self.cuts.setdefault(tid, Stub("stage:" + tid, self.stub))
            if sent.pin is not None:  # the body sent carries the pin (sim.sent_marks): billed as sent
                ttl = "1h" if self.bodies.ttl(k) == "1h" else "5m"
                self.pins[k] = self.sim.sent_marks(k, loads(ex.body_to_send()), sent.pin, ttl)
            if sent.rewrite_tokens:
                self.warm.append({"request": k, **ex.decision.figures})
        self.breaks[k] = str(ex.decision.figures.get("break_reason") or "")
        return cuts

    def bet_outcomes(self) -> list[tuple[int, int]]:
        """(turns estimated, turns earned) of every warm cut, by the ledger's rule
        (``store/budget_ledger.earned_turns``) over the later requests of the sequence."""
        from scalpel_desktop.store.budget_ledger import earned_turns

        n = len(self.seq.requests)
        return [(int(w.get("turns_est") or 0),
                 earned_turns(int(w.get("turns_est") or 0), (self.breaks.get(j) for j in range(w["request"] + 1, n)))[0])
                for w in self.warm]

    def budget_used(self) -> tuple[float, float]:
        """(banked, staked) dollars this arm's conversations added to the user's budget."""
        convs = self.stage.economist.conversations.values()
        return sum(c.banked_usd for c in convs), sum(c.staked_usd for c in convs)

    def pins_for(self, k: int) -> dict[int, str | None]:
        """{unit: ttl} of the pin on request ``k``'s body; {unit: None}: a client marker it took."""
        return dict(self.pins.get(k) or {})

    def rewrite_at(self, k: int, req: Request) -> int | None:
        """The message index at which the real usage shows request ``k``'s cache read stopping
        short of the previous request's whole prompt (None: it did not)."""
        return rewrite_at(self.sim, k, req)

    def after(self, k: int, req: Request, usage: Usage) -> None:
        from scalpel_desktop.exchange import ResponseResult

        ex = self._ex
        if ex is None:
            return
        ex.response = ResponseResult(200, usage, None, None, req.ts_done)
        self.stage.on_response(ex)
        self._ex = None
        if self.warm and self.warm[-1]["request"] == k:  # a warm cut: what the simulator billed for it
            self.warm[-1].update(self._billed(k, usage))

    def _billed(self, k: int, usage: Usage) -> dict:
        """A warm cut's bill as the simulator made it, in its tokens: the read, where the pin's entry
        ends, and the tokens from there to the break (what the economist priced as the re-write)."""
        w = self.warm[-1]
        _keys, _roles, tokens, _first = self.sim.cut_units(k, self.cuts, False)
        cum = list(itertools.accumulate(tokens, initial=0))
        out = {"billed_read": usage.cache_read, "billed_write": usage.cache_write}
        pin = next((u for u, ttl in (self.pins.get(k) or {}).items() if ttl), None)
        brk = w.get("break")
        if pin is not None and isinstance(brk, int):
            start = self.sim.message_start_unit(k, brk)
            out["pin_tokens"] = cum[pin + 1]
            if start is not None:
                out["region_sim_tokens"] = cum[start] - cum[pin + 1]
        return out


def rewrite_at(sim: SequenceSimulator, k: int, req: Request) -> int | None:
    """The message index at which the real usage shows request ``k``'s cache read stopping
    short of the previous request's whole prompt (None: it did not): a function of the
    transcript alone, the same for every arm."""
    if k == 0:
        return None
    b = sim.read_at[k]
    prev_keys = sim.units(k - 1, None)[0]
    prev_units = len(prev_keys)
    keys = sim.units(k, None)[0]
    if b >= prev_units or keys[:prev_units] != prev_keys:
        return None  # read all of it, or the history changed (compaction, rewind): the bytes show that
    line = next((key[0] for key in keys[b:] if isinstance(key[0], int)), None)
    if line is None:
        return None
    msg, prev = -1, None
    for ln in req.history:  # SequenceBodies merges consecutive same-role lines
        if ln.role != prev:
            msg, prev = msg + 1, ln.role
        if ln.index == line:
            return max(0, msg)
    return None


def rewrite_hints(sim: SequenceSimulator) -> list[int | None]:
    """``rewrite_at`` of every request of the simulator's sequence."""
    return [rewrite_at(sim, k, req) for k, req in enumerate(sim.seq.requests)]


_LOG_TEMPLATE = None


def _fresh_log_db():
    """An empty, migrated in-memory surgery log: a copy of one migrated once (migrating
    each arm's database anew cost more than its replay)."""
    global _LOG_TEMPLATE
    import sqlite3

    from scalpel_desktop.store.db import connect

    if _LOG_TEMPLATE is None:
        _LOG_TEMPLATE = connect(Path(":memory:"))
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    _LOG_TEMPLATE.backup(conn)
    conn.row_factory = sqlite3.Row
    return conn


def scratch_dir() -> str:
    """A scratch dir for a replay's spill files: in memory where the system offers it."""
    shm = Path("/dev/shm")
    base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    return tempfile.mkdtemp(prefix="scalpel-bench-", dir=base)


def _stub_bytes() -> int:
    """Bytes of a typical stubbed tool_result block (its text is fixed but for the size and hash)."""
    from scalpel_desktop.surgery.stub import stub_text
    from scalpel_desktop.wire.jsoncodec import dumps

    return len(dumps({"tool_use_id": "toolu_01" + "x" * 22, "type": "tool_result",
                      "content": stub_text("superseded_read", 12345, "0" * 64)}))


def stub_tokens(sim: SequenceSimulator) -> int:
    return sim.stub_tokens(_stub_bytes())
