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
* ``waiting`` and ``last_of``: the reads still waiting to be superseded that
  could be cut, and each large content's latest result, with its position,
  id, tokens and message. A new result that supersedes or repeats one of
  them kills it exactly as the scan would (``follow``): the death joins
  ``later`` (the earliest one wins, as in the scan), and the request's
  candidates are known without the full analysis. What the watch does not
  follow - a ``cd`` where none was seen, a new snapshot of a tool that took
  one before, a success after a failure that could be cut, a repeat of a
  content two watched ones share a hash with - ``may_kill`` names, and the
  request takes the full path, which decides exactly. A duplicate is as
  large as what it kills, a superseded read must be large enough itself.

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
    # Packed as well: (path, position, range key, id, tokens, message) of each read waiting to be
    # superseded that could be cut; (hash, position, id, tokens, message) of each content's latest
    # result, when it could be cut (a kill of either is followed: ``follow``).
    waiting: Any
    last_of: Any
    content: array  # the hashes of ``last_of``'s rows, sorted: a repeat is known without unpacking them
    snapshots: frozenset
    failed_due: int  # the first unit at which a failed result that could be cut dies once a call succeeds

    def nbytes(self) -> int:
        """Rough memory held (the sets' entries; the strings are the view's, shared)."""
        return 400 + 80 * (len(self.content) + len(self.snapshots)) + _rows_held(self.spans) \
            + _rows_held(self.later) + _rows_held(self.waiting) + _rows_held(self.last_of)


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
    rows = [(pos, s.tool_use_id, s.kind, s.tokens, s.unit_index, s.died_at_unit) for pos, s in zip(span_pos, spans)]
    waiting = [(path, pos, _key(acc.range_key), results[pos].id, facts[pos].tokens, results[pos].unit_index)
               for path, reads in st.open_reads.items() for pos, acc in reads
               if could_cut(facts[pos], "superseded_read", limits)]
    last_of = [(hash(key), *_latest(pos, results[pos].id, facts[pos], results[pos].unit_index, limits))
               for key, pos in st.last_of_content.items() if facts[pos].tokens >= limits.min_cut]
    return Watch(limits, cwd, cd_seen, units, len(results), pack_rows(rows), pack_rows(later),
                 pack_rows(waiting), pack_rows(last_of), array("q", sorted({row[0] for row in last_of})),
                 frozenset(st.last_snapshot), failed_due)


def candidates(watch: Watch, units_now: int, results_now: int, stubbed: Iterable[str]) -> list:
    """The candidates of a request that extends the watched one (by new results ``follow`` or
    ``advance`` followed): ``units_now`` messages, ``results_now`` tool results, the results
    ``stubbed`` cut already. What ``find_doom_spans`` would return, in its order."""
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
    """Why the watch cannot follow the request's new results (None: ``follow`` can).

    ``view``: a view of the request's messages from some unit on (``first_new_unit``: the first
    message the watched request did not have, in the view's own numbering; ``units_now``: how
    many messages the whole request has)."""
    got = _new_results(watch, view, first_new_unit, units_now)
    return got if isinstance(got, str) else None


def follow(watch: Watch, view: Any, first_new_unit: int, units_now: int) -> Watch | None:
    """A watch whose ``candidates`` are the request's (``may_kill``'s arguments): the deaths its
    new results bring to watched results joined to ``later``; None when ``may_kill`` says why not.
    Its other tables may lag behind the request's (a failed result's scheduled death): ``advance``
    gives the watch to keep."""
    got = _new_results(watch, view, first_new_unit, units_now)
    return None if got is None or isinstance(got, str) else got


def advance(watch: Watch, view: Any, first_new_unit: int, units_now: int) -> Watch | None:
    """The watch of the request ``view`` ends (``may_kill``'s arguments) as its own full analysis
    would leave it, from the new results alone; None when the watch cannot follow them
    (``may_kill``), or a call succeeds while a failed result that could be cut waits (its death
    would be scheduled then, and the watch keeps no list of the waiting ones: the full analysis
    schedules it).

    What the scan would add: the deaths of watched results the new ones supersede or repeat,
    the new results' files and contents (what a later result may kill them by), a failed one's
    due unit, a large one's stale death (``later``, in position order). ``candidates`` on the
    result gives what ``find_doom_spans`` gives on the whole request (tests/surgery/test_doom_watch.py)."""
    got = _new_results(watch, view, first_new_unit, units_now, advancing=True)
    return None if got is None or isinstance(got, str) else got


def _new_results(watch: Watch, view: Any, first_new_unit: int, units_now: int, advancing: bool = False) -> Any:
    """The walk over the new results, as ``find_doom_spans``'s scan makes it for the watched
    results: why the watch cannot follow (a str), or the watch after them; None when ``advancing``
    and a call succeeds while a failed result that could be cut waits."""
    last = units_now - 1
    limits = watch.limits
    sup_on, dup_on = "superseded_read" in limits.kinds, "duplicate" in limits.kinds
    offset = units_now - len(view.units)  # a unit of the view is unit + offset of the request
    waiting = _Waiting(watch.waiting)  # path -> [(position, range key, id, tokens, unit)]
    last_of = _LastOf(watch)  # content hash -> (position, id, tokens, unit) of its latest result (``_latest``)
    snaps: set = set()
    died: dict[int, tuple] = {}  # position -> ((unit, kind index), (id, tokens, unit)): the earliest new death
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
        u = r.unit_index + offset
        if f.has_cd and not watch.cd_seen:
            return "a cd"  # (after one the watch was made with, a cd changes nothing it knows)
        if r.is_error is True:
            if could_cut(f, "failed", limits):
                failed_due = min(failed_due, u + limits.failed_age)
        elif failed_due <= last:
            return "a failed result dies"
        elif advancing and failed_due < INF:
            return None  # (a death the scan would schedule: only the full analysis knows which)
        if stale_on and f.tokens >= limits.stale_min and could_cut(f, "stale_large", limits):
            later.append((pos, ((u + limits.stale_age + 1, stale),), r.id, f.tokens, u))
        if f.callable_ok:  # (only a call that succeeded supersedes a read or a snapshot)
            acc = f.access(watch.cwd, watch.cd_seen) if f.may_touch_file else None
            if acc is not None:
                reads = waiting.of(acc.path)
                if reads:
                    keep = []
                    for old in reads:
                        if acc.writes or (acc.reads and (acc.whole or _key(acc.range_key) == old[1])):
                            if sup_on:
                                _dies(died, old[0], (u, 0), old[2:])
                        else:
                            keep.append(old)
                    waiting.set(acc.path, keep)
                if acc.reads and could_cut(f, "superseded_read", limits):
                    waiting.set(acc.path, [*waiting.of(acc.path), (pos, _key(acc.range_key), r.id, f.tokens, u)])
            if f.snapshot:
                if r.name in watch.snapshots or r.name in snaps:
                    return "another snapshot"
                snaps.add(r.name)
        if f.dup_key is not None:
            h = hash(f.dup_key)
            if h in last_of:
                prev = last_of.get(h)
                if prev is None:
                    return "the same content again"  # (its latest result is not watched)
                if dup_on and prev[0] >= 0:  # (one that could not be cut for it dies no candidate)
                    _dies(died, prev[0], (u, 1), prev[1:])
            if f.tokens >= limits.min_cut:
                last_of[h] = _latest(pos, r.id, f, u, limits)
        pos += 1
    return _followed(watch, units_now, pos, waiting, last_of, snaps, failed_due, later, died)


def _followed(watch: Watch, units_now: int, results_now: int, waiting: Any, last_of: Any, snaps: set,
               failed_due: int, later: list, died: dict) -> Watch:
    """The watch after the new results: the deaths they brought joined to ``later`` (the earliest
    death first, as the scan keeps it; a result that is a candidate already died earlier), their
    reads, contents, snapshots and stale deaths added."""
    more = watch.later
    if died or later:
        rows = {row[0]: row for row in later_of(watch)}
        rows.update((row[0], row) for row in later)
        spans = {p for p, _ in spans_of(watch)} if died else ()
        for p, (death, (tid, tokens, unit)) in died.items():
            if p in spans:
                continue
            row = rows.get(p)
            rows[p] = (p, tuple(sorted((*row[1], death))), *row[2:]) if row is not None else (p, (death,), tid, tokens, unit)
        more = pack_rows([rows[p] for p in sorted(rows)])
    content = watch.content
    if last_of.fresh:  # (the contents the new results made large ones' latest)
        content = array("q", sorted(set(content) | last_of.fresh.keys()))
    return Watch(watch.limits, watch.cwd, watch.cd_seen, units_now, results_now, watch.spans, more,
                 waiting.packed(),
                 last_of.packed(),
                 content, watch.snapshots | snaps, failed_due)


def _latest(pos: int, tid: str, f: Any, unit: int, limits: Any) -> tuple:
    """The row of a content's latest result: (position, id, tokens, message), or (-1, "", 0, 0) when
    it could not be cut for a duplicate (a protected tool's result: its death makes no candidate,
    and the kinds it could be cut for otherwise, a snapshot's, the watch does not follow)."""
    return (pos, tid, f.tokens, unit) if could_cut(f, "duplicate", limits) else (-1, "", 0, 0)


def _dies(died: dict, pos: int, death: tuple[int, int], info: tuple) -> None:
    """``pos`` (``info``: its id, tokens and message) dies at ``death`` unless it died earlier."""
    cur = died.get(pos)
    if cur is None or death < cur[0]:
        died[pos] = (death, tuple(info))


class _Waiting:
    """The watched reads by path: (position, range key as ``_key`` stores it, id, tokens, unit).

    Unpacked only when a new result touches a path they hold (``dumps(path)`` is in the packed
    rows: the same encoder wrote it there, so no mention means no such read); reads the new
    results add are kept apart until then, and packed after the old rows as they are."""

    def __init__(self, rows: Any):
        self.rows = rows
        self.table: dict | None = None  # every read, once unpacked
        self.fresh: dict = {}  # the new results' own reads while the old rows stay packed

    def of(self, path: str) -> list:
        if self.table is None and (not isinstance(self.rows, bytes) or dumps(path) in self.rows):
            self.table = {}
            for p, *read in _unpacked(self.rows):
                self.table.setdefault(p, []).append(tuple(read))
            for p, reads in self.fresh.items():
                self.table.setdefault(p, []).extend(reads)
        return (self.table if self.table is not None else self.fresh).get(path, [])

    def set(self, path: str, reads: list) -> None:
        (self.table if self.table is not None else self.fresh)[path] = reads

    def packed(self) -> Any:
        if self.table is None:
            more = [(p, *read) for p, reads in self.fresh.items() for read in reads]
            return _appended(self.rows, more)
        return pack_rows([(p, *read) for p, reads in self.table.items() for read in reads])


class _LastOf:
    """Each large content's latest result by its hash (``_latest``'s rows; None for a hash two
    contents share: a repeat of either is not followed). A hash is here when the watch's
    ``content`` holds it (the same contents: those whose latest result is large) or a new result
    added it; the packed rows are read only when a new result repeats a watched content."""

    def __init__(self, watch: Watch):
        self.rows, self.content = watch.last_of, watch.content
        self.table: dict | None = None
        self.fresh: dict = {}

    def __contains__(self, h: int) -> bool:
        return h in self.fresh or _holds(self.content, h)

    def get(self, h: int) -> tuple | None:
        if h in self.fresh:
            return self.fresh[h]
        if self.table is None:
            self.table = {}
            for key, pos, tid, tokens, unit in _unpacked(self.rows):
                self.table[key] = None if key in self.table else (pos, tid, tokens, unit)
        return self.table.get(h)

    def __setitem__(self, h: int, row: tuple) -> None:
        self.fresh[h] = row

    def packed(self) -> Any:
        more = [(h, *row) for h, row in self.fresh.items()]
        if self.table is None:  # (no fresh hash is among the old rows: it would have been looked up)
            return _appended(self.rows, more)
        table = {**self.table, **self.fresh}
        return pack_rows([(h, *row) for h, row in table.items() if row is not None])  # (a hash two share: none)


def _unpacked(rows: Any) -> Any:
    return loads(rows) if isinstance(rows, bytes) else rows


def _appended(rows: Any, more: list) -> Any:
    """``pack_rows`` of ``rows``' rows and then ``more``, without unpacking ``rows`` when both pack."""
    if not more:
        return rows
    if isinstance(rows, bytes) and rows != b"[]":
        added = pack_rows(more)
        if isinstance(added, bytes):
            return rows[:-1] + b"," + added[1:]  # (two JSON arrays joined: one)
    return pack_rows([*_unpacked(rows), *more])


def _key(range_key: Any) -> Any:
    """A read's range key as it reads back from its packed row (a tuple is a list in JSON)."""
    return [_key(x) for x in range_key] if isinstance(range_key, (tuple, list)) else range_key


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
    return [(pos, DoomSpan(tid, kind, tokens, unit, at)) for pos, tid, kind, tokens, unit, at in _unpacked(watch.spans)]


def later_of(watch: Watch) -> list:
    """The watch's results that may become candidates: (position, deaths, id, tokens, unit)."""
    return [(pos, tuple(tuple(d) for d in deaths), tid, tokens, unit)
            for pos, deaths, tid, tokens, unit in _unpacked(watch.later)]


def _holds(sorted_ints: array, value: int) -> bool:
    i = bisect_left(sorted_ints, value)
    return i < len(sorted_ints) and sorted_ints[i] == value
