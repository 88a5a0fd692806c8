"""The doom analysis in its plain form, as it stood before the hot loop was tuned.

tests/surgery/test_doom_fast.py checks that surgery/doom.py's find_doom_spans gives
exactly these answers; keep this copy as the readable statement of the rules.
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.surgery.doom import KINDS, DoomSpan, _facts, doom_limits
from scalpel_desktop.surgery.file_access import _Access
from scalpel_desktop.wire.view import ConversationView


def reference_doom_spans(view: ConversationView, config_like: Any = None, tier: int | None = None) -> list[DoomSpan]:
    """Every dead, unprotected tool result of ``view``, in history order."""
    kinds, keep_recent, failed_age, stale_min, stale_age, min_cut, cut_mcp = doom_limits(config_like, tier)

    results = view.tool_results
    last_unit = len(view.units) - 1
    calls = view.tool_calls
    cwd = view.cwd()
    facts = [_facts(r, calls.get(r.id)) for r in results]

    # For each result: when did it die, and of what (the earliest death wins)?
    died: dict[int, tuple[int, str]] = {}  # result position -> (died_at_unit, kind)
    order = {k: i for i, k in enumerate(KINDS)}

    def mark(pos: int, at: int, kind: str) -> None:
        if kind not in kinds or at > last_unit:
            return
        cur = died.get(pos)
        if cur is None or at < cur[0] or (at == cur[0] and order[kind] < order[cur[1]]):
            died[pos] = (at, kind)

    # Bash `cd` anywhere makes relative Bash paths ambiguous.
    bash_cd_seen = any(f.has_cd for f in facts)

    open_reads: dict[str, list[tuple[int, _Access]]] = {}  # reads waiting to be superseded
    last_of_content: dict[Any, int] = {}
    last_snapshot: dict[str, int] = {}
    first_success_after: list[int | None] = [None] * len(results)
    next_success_unit: int | None = None
    for pos in range(len(results) - 1, -1, -1):
        first_success_after[pos] = next_success_unit
        r = results[pos]
        if r.is_error is not True and r.name is not None:
            next_success_unit = r.unit_index

    for pos, r in enumerate(results):
        f = facts[pos]
        ok = f.callable_ok
        # superseded reads
        if ok and f.may_touch_file:
            acc = f.access(cwd, bash_cd_seen)
            if acc is not None:
                waiting = open_reads.get(acc.path)
                if waiting:
                    keep = []
                    for old_pos, old in waiting:
                        if acc.writes or (acc.reads and (acc.whole or acc.range_key == old.range_key)):
                            mark(old_pos, r.unit_index, "superseded_read")
                        else:
                            keep.append((old_pos, old))
                    open_reads[acc.path] = keep
                if acc.reads:
                    open_reads.setdefault(acc.path, []).append((pos, acc))
        # dead snapshots
        if ok and f.snapshot:
            prev = last_snapshot.get(r.name)  # type: ignore[arg-type]
            if prev is not None:
                mark(prev, r.unit_index, "dead_snapshot")
            last_snapshot[r.name] = pos  # type: ignore[index]
        # duplicates: the same content again, the earlier copy dies
        if f.dup_key is not None:
            prev = last_of_content.get(f.dup_key)
            if prev is not None:
                mark(prev, r.unit_index, "duplicate")
            last_of_content[f.dup_key] = pos
        # failed commands
        if r.is_error is True:
            later = first_success_after[pos]
            if later is not None:
                mark(pos, max(r.unit_index + failed_age, later), "failed")
        # stale large: decided below, once tokens are known

    protected_from = max(0, len(results) - keep_recent)
    stale_on = "stale_large" in kinds
    spans: list[DoomSpan] = []
    for pos in range(protected_from):
        f = facts[pos]
        allowed = f.allowed_mcp if cut_mcp else f.allowed
        if not allowed or f.tokens < min_cut:
            continue
        r = results[pos]
        verdict = died.get(pos)
        if verdict is not None and verdict[1] not in allowed:
            verdict = None
        if stale_on and f.tokens >= stale_min and "stale_large" in allowed:
            at = r.unit_index + stale_age + 1
            if at <= last_unit and (verdict is None or at < verdict[0]):
                verdict = (at, "stale_large")
        if verdict is not None:
            spans.append(DoomSpan(r.id, verdict[1], f.tokens, r.unit_index, verdict[0]))
    return spans
