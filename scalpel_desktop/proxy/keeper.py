"""The cache keeper in the proxy: while Claude Code waits, keep the conversation's cache warm where it pays.

A pipeline stage that changes nothing (``mutates = False``; last in the chain,
after the ledger row): it watches every answered Messages request of a main
conversation (a subagent does not wait for a person) and, when the answer
ended in ``end_turn`` or ``tool_use`` (Claude Code now waits: for the person,
a permission, a long tool), *arms* a wait for that conversation: the pings the
economist's rule allows (``surgery/keeper.py``, from the economist's state:
``surgery/keeper_link.py``), at their times on the project's clock. An answer
without a stop reason is held, unarmed, until the ``Notification`` hook says
Claude Code waits. Each ping when due (``proxy/keeper_pings.py``: the request's
exact bytes with ``max_tokens`` 1, the client's own headers, held in memory
only) is first staked from the user's risk budget under the conversation's
cap, and is not sent when refused.

What ends a wait: a new request of that conversation to that model (``on_request``;
a side request to another model, a title or a probe, is no return), the
``SessionEnd`` hook (the control action ``keeper``, ``event: end``), pausing
the proxy or turning ``keepalive`` off (the next tick), the proxy stopping
(``close``), the plan's last ping, a ping that did not keep the prefix (the
provider lost it, or the clock jumped past the TTL: no ping then, it would
write), or the budget saying no.

The ledger (``store/keeper_ledger.py``): a row per ping (its usage counts, its
cost staked: a realized loss) and, when the person came back past the TTL the
economist counts from the original answer and the read shows the kept prefix,
a row with the re-write avoided banked (a realized saving). ``scalpel report``
shows both. Fail open: nothing here ever touches a client's request; every
error ends one wait and is logged.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Hashable

from scalpel_desktop import clock
from scalpel_desktop.accounting.cache_model import min_cacheable_for
from scalpel_desktop.config import setting
from scalpel_desktop.proxy.keeper_pings import PingLoop, ping_body, ping_headers
from scalpel_desktop.store.keeper_ledger import KEEPALIVE, pause_history
from scalpel_desktop.store.ledger_queries import open_readonly
from scalpel_desktop.surgery import keeper_link as link
from scalpel_desktop.surgery.keeper import STOP_REASONS, TICK_S, KeepPlan, Pauses, realized_saving
from scalpel_desktop.wire.usage import Usage

log = logging.getLogger("scalpel.keeper")

MAX_HELD_BYTES = 64 * 1024 * 1024  # ping bodies held at once (a memory bound, not fitted): past it, no new wait


@dataclass
class Wait:
    """One conversation's pause."""

    key: Hashable  # (session id, agent id), as the economist keys it
    model: str
    serial: int  # the economist's request this pause follows
    url: str
    headers: list[tuple[str, str]] = field(repr=False)
    body: bytes | None = field(repr=False)  # the request's sent bytes, then (from the first ping) the ping's
    sent_at: float
    ended_at: float
    first_byte_s: float
    ttl_s: float
    usage: Usage
    figures: dict
    armed: bool
    plan: KeepPlan | None = None
    pings: int = 0
    last_use: float = 0.0  # when the cache was last used: the request, then each ping that kept it
    busy: bool = False
    done: bool = False
    why: str = ""


class Keeper:
    name = "keeper"
    mutates = False

    def __init__(self, settings: Any, ledger: Any = None, surgery: Callable[[], Any] = lambda: None,
                 pauses: Callable[[], Pauses] | None = None):
        """``surgery``: the running surgery stage (its economist and lock), or None; ``pauses``: the user's
        pauses (default: the ledger's, read at the first answer)."""
        self.settings, self.ledger, self.surgery = settings, ledger, surgery
        self._load_pauses = pauses or _ledger_pauses
        self._pauses: Pauses | None = None
        # (session id, agent id, model) -> its wait: a side request to another model (a title, a probe) is
        # no return of the person and leaves the main model's wait alone
        self._waits: dict[tuple, Wait] = {}
        self._returning: dict[tuple, Wait] = {}
        self._lock = threading.Lock()
        self.loop = PingLoop(self._tick)
        self.stats = {"pings": 0, "ping_cost_usd": 0.0, "kept": 0, "saved_usd": 0.0, "refused": 0}
        self.checked_at = 0.0  # the clock at the last tick
        self.last_reason = ""
        self.last_refusal = ""  # why the budget or the cap last said no to a ping

    # -- the stage ------------------------------------------------------------------------
    def on_request(self, ex: Any) -> None:
        key = _key(ex)
        if key is None:
            return
        wk = (*key, ex.model)
        with self._lock:
            w = self._waits.pop(wk, None)
            if w is not None:
                w.done, w.body, w.headers = True, None, []
                if w.pings:
                    self._returning[wk] = w

    on_turn = on_request

    def on_response(self, ex: Any) -> None:
        key, res = _key(ex), ex.response
        if key is None or res is None or ex.request.endpoint != "messages" or ex.request.api != "anthropic":
            return
        if key[1]:
            return  # a subagent: no person waits on it
        with self._lock:
            back = self._returning.pop((*key, ex.model), None)
        if back is not None:
            self._came_back(back, ex)
        if res.status != 200 or res.usage is None or ex.surgery is None or not self.enabled():
            return
        self._arm(ex, key, armed=res.stop_reason in STOP_REASONS)

    def enabled(self) -> bool:
        return bool(setting(self.settings, "keepalive")) and not bool(setting(self.settings, "paused"))

    def close(self) -> None:
        with self._lock:
            self._waits.clear()
            self._returning.clear()
        self.loop.close()

    # -- arming ---------------------------------------------------------------------------
    def _arm(self, ex: Any, key: Hashable, armed: bool) -> None:
        res, req = ex.response, ex.request
        base = str(setting(self.settings, "anthropic_upstream")).rstrip("/")
        w = Wait(key, ex.model, ex.surgery.serial, base + req.path + (f"?{req.query}" if req.query else ""),
                 [], None, req.received_at, res.finished_at, (res.ttfb_ms or 0.0) / 1000.0, 0.0, res.usage,
                 dict(ex.decision.figures or {}), armed, last_use=req.received_at)
        if armed and not self._plan(w):
            return  # (decided before the body is copied: most answers of a tool loop end here, cheaply)
        body = ex.body_to_send()  # (the bytes sent, held as they are: the ping is made of them when due)
        w.body, w.headers = body, ping_headers(req.headers)
        with self._lock:
            held = sum(len(x.body or b"") for x in self._waits.values())
            if held + len(body) > MAX_HELD_BYTES:
                self.last_reason = f"{held:,} bytes of pings held already: no new wait"
                return
            self._waits[(*key, ex.model)] = w
        if armed:
            self.loop.start()

    def _plan(self, w: Wait) -> bool:
        """The wait's pings (under the surgery stage's lock); False: none."""
        stage = self.surgery()
        if stage is None:
            self.last_reason = "no surgery stage: no economist, no budget"
            return False
        if self._pauses is None:
            self._pauses = self._load_pauses()
        with _locked(stage):
            eco = stage.economist
            state = link.latest_state(eco, w.key, w.model)
            w.ttl_s = state.ttl_s if state is not None else 300.0
            w.plan = link.pause_plan(eco, w.key, w.model, w.usage, w.figures, sent_at=w.sent_at,
                                     ended_at=w.ended_at, first_byte_s=w.first_byte_s, pauses=self._pauses)
        self.last_reason = w.plan.reason
        return w.plan.pings > 0

    # -- the hooks (the control action ``keeper``) ----------------------------------------
    def action(self, payload: dict) -> dict:
        """``{"event": "waiting" | "end" | "status", "session": ID}``: Claude Code's Notification hook (it
        waits: arm what is held), its SessionEnd hook (no more pings for that session), or the status."""
        event, session = payload.get("event", "status"), str(payload.get("session") or "")
        if event == "end":
            with self._lock:
                for key in [k for k in self._waits if k[0] == session]:
                    self._waits.pop(key).done = True
                for key in [k for k in self._returning if k[0] == session]:
                    self._returning.pop(key)
        elif event == "waiting":
            with self._lock:
                held = [w for k, w in self._waits.items() if k[0] == session and not w.armed and not w.done]
            for w in held:
                w.armed = self._plan(w)
                if not w.armed:
                    with self._lock:
                        self._waits.pop((*w.key, w.model), None)
            if held:
                self.loop.start()
        elif event != "status":
            raise ValueError(f"keeper: unknown event {event!r}; one of waiting, end, status")
        return {"ok": True, **self.status()}

    def status(self) -> dict:
        with self._lock:
            waiting = sum(1 for w in self._waits.values() if w.armed and not w.done)
        return {"keepalive": self.enabled(), "waiting": waiting, "checked_at": self.checked_at,
                "last_reason": self.last_reason, "last_refusal": self.last_refusal, **self.stats}

    # -- the pings (on the keeper's own thread) -------------------------------------------
    def _tick(self, loop: PingLoop) -> None:
        now = clock.now()
        if not self.enabled():
            with self._lock:
                self._waits.clear()
                self._returning.clear()
            self.checked_at = now
            return
        with self._lock:
            due = [w for w in self._waits.values()
                   if w.armed and not w.done and not w.busy and w.plan is not None and w.pings < w.plan.pings
                   and now >= w.last_use + w.plan.step_s]
        for w in due:
            if now > w.last_use + w.ttl_s - TICK_S - w.first_byte_s:
                self._end(w, "the clock passed the TTL before the ping was due (a ping now would write)")
                continue
            w.busy = True
            loop.spawn(self._ping(loop, w))
        self.checked_at = now

    async def _ping(self, loop: PingLoop, w: Wait) -> None:
        stage = self.surgery()
        try:
            if stage is None or w.body is None:
                return self._end(w, "no surgery stage")
            est = w.plan.quote.ping_usd
            with _locked(stage):
                why = link.ping_refusal(stage.economist, w.key, est)
                if why is None:
                    link.stake(stage.economist, w.key, est)  # the worst case, before it is sent
            if why is not None:
                self.stats["refused"] += 1
                self.last_refusal = why
                return self._end(w, f"not pinged: {why}")
            if not w.pings:
                w.body = ping_body(w.body)  # the request's bytes with max_tokens 1, stream false (keeper_pings)
                if w.body is None:
                    with _locked(stage):
                        link.stake(stage.economist, w.key, -est)
                    return self._end(w, "no ping possible for this request (no marker, or thinking with a budget)")
            sent_at = clock.now()
            got = await loop.send(w.url, w.headers, w.body)
            ended_at = clock.now()
            ok = got.status == 200 and got.usage is not None
            cost = stage.economist._rates(w.model).cost(got.usage) if ok else 0.0
            with _locked(stage):
                link.stake(stage.economist, w.key, cost - est)  # what it really cost
                kept = link.record_ping(stage.economist, w.key, w.model, w.serial, sent_at, ended_at,
                                        got.usage if ok else None, w.plan.quote.prefix_tokens)
            w.pings += 1
            self.stats["pings"] += 1
            self.stats["ping_cost_usd"] += cost
            self._row(w, sent_at, "ping", got=got, staked=cost,
                      reason=f"keep-alive {w.pings} of {w.plan.pings}" + ("" if kept else ": the prefix was not kept"),
                      figures={"ping": w.pings, **w.plan.figures()})
            if not kept:
                return self._end(w, f"ping {w.pings} did not keep the prefix ({got.error or got.status})")
            w.last_use = sent_at
            if w.pings >= w.plan.pings:
                w.body, w.headers = None, []  # (the pause's last ping: the bytes go, the figures stay)
        except Exception:  # noqa: BLE001 - a ping never hurts anything else
            log.exception("a keep-alive ping failed")
            self._end(w, "the ping failed")
        finally:
            w.busy = False

    def _end(self, w: Wait, why: str) -> None:
        w.done, w.body, w.headers, w.why = True, None, [], why
        self.last_reason = why
        with self._lock:
            if self._waits.get((*w.key, w.model)) is w and not w.pings:
                self._waits.pop((*w.key, w.model))

    # -- the return -----------------------------------------------------------------------
    def _came_back(self, w: Wait, ex: Any) -> None:
        """The person came back after ``w``'s pings: bank the re-write they avoided, if they did."""
        stage, usage = self.surgery(), ex.response.usage if ex.response is not None else None
        if stage is None or usage is None or ex.response.status != 200 or w.plan is None:
            return
        at = ex.request.received_at
        kept_until = w.last_use + w.ttl_s
        with _locked(stage):
            late = link.would_have_expired(stage.economist, w.ttl_s, w.ended_at, at)
        if not late or at > kept_until or usage.cache_read < w.plan.quote.prefix_tokens - min_cacheable_for(w.model):
            return
        saved = realized_saving(w.plan.quote, usage.cache_read)
        if saved <= 0:
            return
        with _locked(stage):
            link.bank_return(stage.economist, w.key, saved)
        self.stats["kept"] += 1
        self.stats["saved_usd"] += saved
        self._row(w, at, "kept", banked=saved, reason=f"came back after {at - w.ended_at:.0f} s, kept by "
                  f"{w.pings} ping{'s' if w.pings != 1 else ''}",
                  figures={"pings": w.pings, "gap_s": round(at - w.ended_at, 3), "read_tokens": usage.cache_read,
                           **w.plan.figures()})

    def _row(self, w: Wait, ts: float, decision: str, *, got: Any = None, staked: float | None = None,
             banked: float | None = None, reason: str = "", figures: dict | None = None) -> None:
        if self.ledger is None:
            return
        u = got.usage if got is not None else None
        row = {"ts": ts, "session": str(w.key[0])[:100] or None, "agent": None, "api": "anthropic",
               "endpoint": KEEPALIVE, "model": w.model[:100] or None, "decision": decision, "reason": reason[:200],
               "figures": json.dumps(figures or {}, separators=(",", ":")), "staked_usd": staked or None,
               "banked_usd": banked or None}
        if got is not None:
            row.update({"status": got.status or None, "ttfb_ms": got.ttfb_ms, "total_ms": got.total_ms,
                        "error": got.error or None})
        if u is not None:
            row.update({"input_tokens": u.input_tokens, "cache_write_5m": u.cache_write_5m,
                        "cache_write_1h": u.cache_write_1h, "cache_read": u.cache_read, "output_tokens": u.output_tokens})
        try:
            self.ledger.submit(row)
        except Exception:  # noqa: BLE001 - the row is the ledger's business, never the ping's
            log.exception("the keeper's ledger row failed")


def _key(ex: Any) -> Hashable | None:
    k = ex.key
    return (k.session_id, k.agent_id or "") if k is not None and hasattr(k, "session_id") else None


def _locked(stage: Any) -> Any:
    return getattr(stage, "_lock", None) or contextlib.nullcontext()


def _ledger_pauses() -> Pauses:
    """The user's pauses from the ledger (``store/keeper_ledger.pause_history``); none when unreadable."""
    try:
        conn = open_readonly(timeout=1.0)
        if conn is None:
            return Pauses()
        try:
            gaps, ended = pause_history(conn)
        finally:
            conn.close()
    except Exception as e:  # noqa: BLE001 - no history: no pings until the ledger shows some
        log.warning("could not read the ledger's pauses: %s", e)
        return Pauses()
    return Pauses.of(gaps, ended)


def install(runtime: Any, chain: Any, ledger: Any) -> Keeper:
    """The runtime's keeper: the last stage of its chain (closed with the stages when the proxy stops) and
    the control action ``keeper`` the hooks call."""
    k = Keeper(runtime.settings, ledger, lambda: chain.get("surgery"))
    chain.add_stages([k], before="")
    runtime.register_action("keeper", k.action)
    return k
