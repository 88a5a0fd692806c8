"""Doom spans: tool results that are provably dead (SPEC section 5).

Kinds (tier 1 = the first three, tier 2 = all five):

* ``superseded_read``: a Read of a file that a later Read (whole file, or the
  same range), Edit, Write, MultiEdit or NotebookEdit of that file replaces;
  a Bash ``cat``/``head``/``tail``/``sed -n`` of one file counts as a read
  only when its path is unambiguous (one plain path, no pipes, globs,
  variables, redirections; relative only when no ``cd`` was ever run).
  Only a successful later call supersedes (a failed Edit changed nothing).
* ``duplicate``: the same content returned again later; the latest is kept.
* ``failed``: an error result (``is_error: true``) at least
  ``failed_age_messages`` messages old, after which some later call succeeded.
* ``dead_snapshot``: a browser/page snapshot followed by a later successful
  call of the same snapshot tool.
* ``stale_large``: >= ``stale_min_tokens`` and more than
  ``stale_age_messages`` messages old.

Protected whatever the tier: everything that is not a tool result (user and
assistant text, thinking, tool inputs), answers the user gave
(AskUserQuestion, ExitPlanMode), subagent reports (Task, Agent), results of
MCP tools (``mcp__*``) unless ``cut_mcp_results`` (a snapshot tool's result,
whose meaning we do know, may still die as a dead snapshot), the
``keep_recent`` most recent results, anything not understood (no matching
call, unknown block types such as ``tool_reference``, results already
stubbed), results under ``min_cut_tokens``, and results whose stub would not
be at most half their size.

``died_at_unit`` is the unit index at which a result became dead: the bench
uses it for its "cut the moment it died" ceiling, the economist to know which
cuts fall at or after the natural break.
"""

from __future__ import annotations

import functools
from typing import Any

from scalpel_desktop.surgery.doom_watch import watch_of
from scalpel_desktop.surgery.file_access import _Access, bash_read  # noqa: F401 (bash_read re-exported)
# What a result is, for these rules (re-exported: most callers know them as doom's).
from scalpel_desktop.surgery.result_facts import (  # noqa: F401
    IMAGE_TOKENS, KINDS, PROTECTED_TOOLS, SNAPSHOT_NAME, STUB_MARK, STUB_TOKENS, TIER_KINDS, DoomLimits, DoomSpan,
    _Facts, _allowed_kinds, _facts, doom_limits, is_snapshot_tool, is_stub, result_tokens)
from scalpel_desktop.wire.view import ConversationView

def find_doom_spans(view: ConversationView, config_like: Any = None, tier: int | None = None) -> list[DoomSpan]:
    """Every dead, unprotected tool result of ``view``, in history order.

    Hot on every warm request (thousands of results): the loops avoid per-result
    calls and allocations; tests/surgery/test_doom_fast.py checks the answers
    against the plain form of the same rules (tests/surgery/doom_reference.py).
    """
    limits = doom_limits(config_like, tier)
    kinds, keep_recent, failed_age, stale_min, stale_age, min_cut, cut_mcp = limits

    results = view.tool_results
    n = len(results)
    last_unit = len(view.units) - 1
    calls_get = view.tool_calls.get
    cwd = view.cwd()
    sup_on, dup_on, fail_on, snap_on = (k in kinds for k in KINDS[:4])
    carried = _carried(view, results, (kinds, failed_age, cwd))
    begin = carried.count if carried is not None else 0
    # Each result's facts (cached on the result; the carried prefix's are the very same objects,
    # their calls in earlier units shared with it). Bash `cd` anywhere makes relative Bash paths ambiguous.
    boundary = n  # the first result of the last unit: the next request shares what comes before
    while boundary and results[boundary - 1].unit_index >= last_unit:
        boundary -= 1
    facts: list[_Facts] = carried.facts[:begin] if carried is not None else []
    bash_cd_seen = cd_before = carried.cd_prefix if carried is not None else False  # (before: the boundary)
    for pos in range(begin, n):
        r = results[pos]
        call = calls_get(r.id)
        f = r.__dict__.get("_doom_facts")
        if f is None or f._call is not call:
            f = _Facts(r, call)
            r.__dict__["_doom_facts"] = f
        facts.append(f)
        if f.has_cd:
            bash_cd_seen = True
            cd_before = cd_before or pos < boundary
    if carried is not None and carried.cd_seen != bash_cd_seen:
        carried, begin = None, 0  # its paths were read under another `cd` history than this one's: anew

    # For each result: when did it die, and of what (the earliest death wins, then
    # the kind listed first in KINDS)? pos -> (died_at_unit, index in KINDS). A failed
    # result's death may lie past the last unit (it is not dead yet): filtered below.
    st = carried.fork() if carried is not None else _Scan((kinds, failed_age, cwd), bash_cd_seen)
    died, open_reads, last_of_content, last_snapshot, pending_fail = (
        st.died, st.open_reads, st.last_of_content, st.last_snapshot, st.pending_fail)
    died_get = died.get
    acc_key = (cwd, bash_cd_seen)  # _Facts.access's cache key
    for pos in range(begin, n):
        if pos == boundary:
            view.for_next["doom"] = st.fork(pos, results, facts, cd_before)
        r = results[pos]
        f = facts[pos]
        u = r.unit_index
        if f.callable_ok:
            # superseded reads
            if f.may_touch_file:
                acc = f._acc if f._acc_key == acc_key else f.access(cwd, bash_cd_seen)
                if acc is not None:
                    waiting = open_reads.get(acc.path)
                    if waiting:
                        keep = []
                        for old_pos, old in waiting:
                            if acc.writes or (acc.reads and (acc.whole or acc.range_key == old.range_key)):
                                if sup_on:
                                    cur = died_get(old_pos)
                                    if cur is None or (u, 0) < cur:
                                        died[old_pos] = (u, 0)
                            else:
                                keep.append((old_pos, old))
                        waiting = open_reads[acc.path] = keep
                    if acc.reads:  # (a new list, never appended to: a forked scan shares the old ones)
                        open_reads[acc.path] = [*(waiting or ()), (pos, acc)]
            # dead snapshots
            if f.snapshot:
                prev = last_snapshot.get(r.name)  # type: ignore[arg-type]
                if prev is not None and snap_on:
                    cur = died_get(prev)
                    if cur is None or (u, 3) < cur:
                        died[prev] = (u, 3)
                last_snapshot[r.name] = pos  # type: ignore[index]
        # duplicates: the same content again, the earlier copy dies
        dk = f.dup_key
        if dk is not None:
            prev = last_of_content.get(dk)
            if prev is not None and dup_on:
                cur = died_get(prev)
                if cur is None or (u, 1) < cur:
                    died[prev] = (u, 1)
            last_of_content[dk] = pos
        # failed commands die once some later call succeeded (and they are old enough)
        if r.is_error is True:
            if fail_on:
                pending_fail.append(pos)
        elif r.name is not None and pending_fail:
            for old_pos in pending_fail:
                at = max(results[old_pos].unit_index + failed_age, u)
                cur = died_get(old_pos)
                if cur is None or (at, 2) < cur:
                    died[old_pos] = (at, 2)
            pending_fail.clear()
        # stale large: decided below, once tokens are known
    if boundary == n:
        view.for_next["doom"] = st.fork(n, results, facts, cd_before)
    view.from_previous = None  # (used: not kept alive beside this view's own)

    protected_from = max(0, n - keep_recent)
    stale_on = "stale_large" in kinds
    spans: list[DoomSpan] = []
    span_pos: list[int] = []
    for pos in range(protected_from):
        f = facts[pos]
        allowed = f.allowed_mcp if cut_mcp else f.allowed
        if not allowed or f.tokens < min_cut:
            continue
        r = results[pos]
        verdict = died_get(pos)
        if verdict is not None and (verdict[0] > last_unit or KINDS[verdict[1]] not in allowed):
            verdict = None
        if stale_on and f.tokens >= stale_min and "stale_large" in allowed:
            at = r.unit_index + stale_age + 1
            if at <= last_unit and (verdict is None or at < verdict[0]):
                verdict = (at, 4)
        if verdict is not None:
            spans.append(DoomSpan(r.id, KINDS[verdict[1]], f.tokens, r.unit_index, verdict[0]))
            span_pos.append(pos)
    # What the next request's new results would have to do to make a new cut
    # (made only if the memo drops this view's conversation: surgery/ghost.py)
    view.for_next["watch"] = functools.partial(watch_of, st, facts, results, limits, spans, span_pos, cwd,
                                               bash_cd_seen, stale_on, len(view.units))
    return spans


class _Scan:
    """The history scan's state after some results: what the next request's scan resumes from.

    Kept on the view (``for_next``), taken over by the next request's view when it shares these
    results (``previous``), and forked (its tables copied, its lists shared and never appended to)
    so that either can go on without disturbing the other."""

    __slots__ = ("key", "cd_seen", "count", "results", "facts", "cd_prefix", "died", "open_reads",
                 "last_of_content", "last_snapshot", "pending_fail")

    def __init__(self, key: Any, cd_seen: bool):
        self.key, self.cd_seen = key, cd_seen  # cd_seen: whether the paths were read as after a `cd`
        self.count = 0
        self.results: list = []  # the first ``count`` results, and their facts
        self.facts: list = []
        self.cd_prefix = False  # a `cd` among those results
        self.died: dict[int, tuple[int, int]] = {}
        self.open_reads: dict[str, list[tuple[int, _Access]]] = {}  # reads waiting to be superseded
        self.last_of_content: dict[Any, int] = {}
        self.last_snapshot: dict[str, int] = {}
        self.pending_fail: list[int] = []  # failed results no later call has succeeded after yet

    def fork(self, count: int | None = None, results: Any = None, facts: Any = None,
             cd_prefix: bool = False) -> "_Scan":
        other = _Scan(self.key, self.cd_seen)
        if count is None:
            other.count, other.results, other.facts, other.cd_prefix = self.count, self.results, self.facts, self.cd_prefix
        else:
            other.count, other.results, other.facts, other.cd_prefix = count, results[:count], facts[:count], cd_prefix
        other.died, other.open_reads = dict(self.died), dict(self.open_reads)
        other.last_of_content, other.last_snapshot = dict(self.last_of_content), dict(self.last_snapshot)
        other.pending_fail = list(self.pending_fail)
        return other


def _carried(view: ConversationView, results: list, key: Any) -> _Scan | None:
    """The previous request's scan, when this view holds the very results it covered (every one
    the same object: a result re-written since, a stub re-applied anew, is read afresh)."""
    got = (view.from_previous or {}).get("doom")
    if not isinstance(got, _Scan) or got.key != key or got.count > len(results):
        return None
    if any(a is not b for a, b in zip(results, got.results)):
        return None
    return got
