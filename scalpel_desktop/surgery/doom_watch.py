"""A conversation's next dead results, known from its last full analysis without the messages.

A known conversation whose memo entry was dropped (``surgery/ghost.py``)
goes out before any analysis only when the full analysis would cut nothing
new. The economist decides that from the request's shape and its candidates
(``find_doom_spans``'s dead, unprotected results); the shape is rebuilt from
the new bytes, and the candidates come from this ``Watch``, kept from the
scan's end state (``doom.find_doom_spans``) when it last ran:

* ``spans``: the candidates then. A dead result stays dead (a death is never
  undone, and a later one never comes earlier) and the protected recent
  ones only move forward, so each is a candidate still unless it was cut
  since (it is a stub then);
* ``later``: every other result that could be cut (``could_cut``: its size,
  the kinds it may die of) and has a death known now: protected among the
  ``keep_recent`` most recent, or due at a later message (a failed result's
  age, a stale large one's). Each becomes a candidate on the request that
  is long enough and has enough newer results (``candidates``): exactly as
  the scan would find it;
* the new results' own deaths are not computed: ``may_kill`` says when one
  might supersede, duplicate or follow a watched result (a read of the same
  file, the same content, another snapshot, a success after a failure that
  could be cut, a ``cd`` where none was seen) and the request takes the
  full path, which decides exactly. Only results that could be cut are
  watched: a duplicate is as large as what it kills, a superseded read must
  be large enough itself.

Nothing is estimated: these are the doom rules' own triggers and figures,
read from the same facts (``result_facts._Facts``).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any, Iterable

from scalpel_desktop.surgery.digests import ids_of
from scalpel_desktop.surgery.result_facts import KINDS, DoomSpan, _Facts
from scalpel_desktop.wire.jsoncodec import dumps, loads

INF = 1 << 62


@dataclass(frozen=True)
class Watch:
    limits: Any  # doom.DoomLimits the analysis ran with
    cwd: str | None
    cd_seen: bool
    units: int  # messages the analysed request had
    results: int  # ... and tool results
    # Packed (``pack_rows``: one JSON array each, read back by ``spans_of`` / ``later_of``): a watch
    # outlives the request whose scan made it by many others', and hundreds of small tuples, ints and
    # the document's own id strings, scattered over the arenas that request's document filled, kept
    # those arenas from going back to the system (``surgery/ghost.py``).
    spans: Any  # its candidates, (position, DoomSpan) in history order
    later: Any  # (position, deaths [(unit, kind index)] sorted, DoomSpan fields) of results that may become ones
    open_paths: frozenset  # files with a read waiting to be superseded that could be cut
    content: array  # hash() of each content seen that could be cut (a duplicate's key), sorted
    snapshots: frozenset
    failed_due: int  # the first unit at which a failed result that could be cut dies once a call succeeds

    def nbytes(self) -> int:
        """Rough memory held (the sets' entries; the strings are the view's, shared)."""
        return 400 + 80 * (len(self.open_paths) + len(self.content) + len(self.snapshots)) \
            + _rows_held(self.spans) + _rows_held(self.later)


def could_cut(f: Any, kind: str, limits: Any) -> bool:
    """Could a result with these facts be cut for dying of ``kind``? (What ``find_doom_spans`` asks
    of a dead result before it becomes a candidate: its size, and the kinds it may die of.)"""
    return f.tokens >= limits.min_cut and kind in (f.allowed_mcp if limits.cut_mcp else f.allowed)


def watch_of(st: Any, facts: list, results: list, limits: Any, spans: list, span_pos: list, cwd: str | None,
             cd_seen: bool, stale_on: bool, units: int) -> Watch:
    """The watch of a finished scan (``st``: its end state; ``facts``: each result's; ``spans``: the
    candidates it found, at ``span_pos``)."""
    stale = KINDS.index("stale_large")
    cands = set(span_pos)
    deaths: dict[int, list] = {}
    for pos, (at, kind) in st.died.items():
        if could_cut(facts[pos], KINDS[kind], limits):
            deaths[pos] = [(at, kind)]
    if stale_on:
        for pos in range(len(results)):
            f = facts[pos]
            if f.tokens >= limits.stale_min and could_cut(f, "stale_large", limits):
                deaths.setdefault(pos, []).append((results[pos].unit_index + limits.stale_age + 1, stale))
    later = []
    for pos in sorted(deaths):
        if pos not in cands:
            r = results[pos]
            later.append((pos, tuple(sorted(deaths[pos])), r.id, facts[pos].tokens, r.unit_index))
    failed_due = min((results[pos].unit_index + limits.failed_age for pos in st.pending_fail
                      if could_cut(facts[pos], "failed", limits)), default=INF)
    cut = limits.min_cut
    rows = [(pos, s.tool_use_id, s.kind, s.tokens, s.unit_index, s.died_at_unit) for pos, s in zip(span_pos, spans)]
    return Watch(limits, cwd, cd_seen, units, len(results), pack_rows(rows), pack_rows(later),
                 frozenset(p for p, waiting in st.open_reads.items() if any(facts[i].tokens >= cut for i, _ in waiting)),
                 array("q", sorted({hash(key) for key, pos in st.last_of_content.items() if facts[pos].tokens >= cut})),
                 frozenset(st.last_snapshot), failed_due)


def candidates(watch: Watch, units_now: int, results_now: int, stubbed: Iterable[str]) -> list:
    """The candidates of a request that extends the watched one by new results none of which killed
    anything (``may_kill`` said None): ``units_now`` messages, ``results_now`` tool results, the
    results ``stubbed`` cut already. What ``find_doom_spans`` would return, in its order."""
    last = units_now - 1
    protected_from = results_now - watch.limits.keep_recent
    gone = stubbed if isinstance(stubbed, (set, frozenset)) else ids_of(stubbed) if isinstance(stubbed, bytes) \
        else set(stubbed)
    out = [(pos, s) for pos, s in spans_of(watch) if s.tool_use_id not in gone]
    for pos, deaths, tid, tokens, unit in later_of(watch):
        if pos >= protected_from:
            break  # (in position order: every later one is protected too)
        at, kind = deaths[0]
        if at <= last and tid not in gone:
            out.append((pos, DoomSpan(tid, KINDS[kind], tokens, unit, at)))
    out.sort(key=lambda p: p[0])
    return [s for _, s in out]


def may_kill(watch: Watch, view: Any, first_new_unit: int, units_now: int) -> str | None:
    """Why a new result of this request might kill one that could be cut (None: none can).

    ``view``: a view of the request's messages from some unit on (``first_new_unit``: the first
    message the watched request did not have, in the view's own numbering; ``units_now``: how
    many messages the whole request has)."""
    got = _new_results(watch, view, first_new_unit, units_now)
    return got if isinstance(got, str) else None


def advance(watch: Watch, view: Any, first_new_unit: int, units_now: int) -> Watch | None:
    """The watch of the request ``view`` ends (``may_kill``'s arguments) as its own full analysis
    would leave it, from the new results alone; None when one may kill (``may_kill``), or a call
    succeeds while a failed result that could be cut waits (its death would be scheduled then,
    and the watch keeps no list of the waiting ones: the full analysis schedules it).

    What the scan would add for results that killed nothing: their files, contents and snapshots
    (what a later result may kill them by), a failed one's due unit, a large one's stale death
    (``later``, in position order after every older one). ``candidates`` on the result gives what
    ``find_doom_spans`` gives on the whole request (tests/surgery/test_doom_watch.py)."""
    got = _new_results(watch, view, first_new_unit, units_now, advancing=True)
    if got is None or isinstance(got, str):
        return None
    paths, contents, snaps, failed_due, later, count = got
    content = watch.content
    if contents:
        content = array("q", sorted(set(content) | contents))
    more = pack_rows(later_of(watch) + later) if later else watch.later
    return Watch(watch.limits, watch.cwd, watch.cd_seen, units_now, watch.results + count, watch.spans,
                 more, watch.open_paths | paths, content, watch.snapshots | snaps, failed_due)


def _new_results(watch: Watch, view: Any, first_new_unit: int, units_now: int, advancing: bool = False) -> Any:
    """``may_kill``'s walk over the new results: why one may kill (a str), or what they add to the
    watch (its sets, the failed due unit, the later deaths, their count); None when
    ``advancing`` and a call succeeds while a failed result that could be cut waits."""
    last = units_now - 1
    limits = watch.limits
    offset = units_now - len(view.units)  # a unit of the view is unit + offset of the request
    paths: set = set()
    contents: set = set()
    snaps: set = set()
    failed_due = watch.failed_due
    later = []
    stale = KINDS.index("stale_large")
    stale_on = "stale_large" in limits.kinds
    pos = watch.results
    for r in view.tool_results:
        if r.unit_index < first_new_unit:
            continue
        call = view.tool_calls.get(r.id)
        if call is None or r.name is None:
            return "a result whose call is not among the new messages"
        f = _Facts(r, call)
        if f.has_cd and not watch.cd_seen:
            return "a cd"  # (after one the watch was made with, a cd changes nothing it knows)
        if r.is_error is True:
            if could_cut(f, "failed", limits):
                failed_due = min(failed_due, r.unit_index + offset + limits.failed_age)
        elif failed_due <= last:
            return "a failed result dies"
        elif advancing and failed_due < INF:
            return None  # (a death the scan would schedule: only the full analysis knows which)
        if f.tokens >= limits.min_cut and f.dup_key is not None:
            h = hash(f.dup_key)
            if _holds(watch.content, h) or h in contents:
                return "the same content again"
            contents.add(h)
        if advancing and stale_on and f.tokens >= limits.stale_min and could_cut(f, "stale_large", limits):
            unit = r.unit_index + offset
            later.append((pos, ((unit + limits.stale_age + 1, stale),), r.id, f.tokens, unit))
        pos += 1
        if not f.callable_ok:
            continue  # (only a call that succeeded supersedes a read or a snapshot)
        if f.may_touch_file:
            acc = f.access(watch.cwd, watch.cd_seen)
            if acc is not None:
                if acc.path in watch.open_paths or acc.path in paths:
                    return "a file read before"
                if acc.reads and f.tokens >= limits.min_cut:
                    paths.add(acc.path)
        if f.snapshot:
            if r.name in watch.snapshots or r.name in snaps:
                return "another snapshot"
            snaps.add(r.name)
    return frozenset(paths), contents, frozenset(snaps), failed_due, later, pos - watch.results


def pack_rows(rows: list) -> Any:
    """Rows of ids, strings and ints as one JSON array (a tuple when they do not serialise)."""
    try:
        return dumps(rows)
    except (TypeError, ValueError):
        return tuple(rows)


def _rows_held(rows: Any) -> int:
    """Rough memory of ``pack_rows``'s result: its bytes packed, about 120 a row unpacked."""
    return 2 * len(rows) if isinstance(rows, bytes) else 120 * len(rows)


def spans_of(watch: Watch) -> list:
    """The watch's candidates: (position, DoomSpan) in history order."""
    rows = loads(watch.spans) if isinstance(watch.spans, bytes) else watch.spans
    return [(pos, DoomSpan(tid, kind, tokens, unit, at)) for pos, tid, kind, tokens, unit, at in rows]


def later_of(watch: Watch) -> list:
    """The watch's results that may become candidates: (position, deaths, id, tokens, unit)."""
    rows = loads(watch.later) if isinstance(watch.later, bytes) else watch.later
    return [(pos, tuple(tuple(d) for d in deaths), tid, tokens, unit) for pos, deaths, tid, tokens, unit in rows]


def _holds(sorted_ints: array, value: int) -> bool:
    i = bisect_left(sorted_ints, value)
    return i < len(sorted_ints) and sorted_ints[i] == value
