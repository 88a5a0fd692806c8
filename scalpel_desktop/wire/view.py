"""One conversation view over the three request formats.

The surgery never walks raw request JSON itself: it asks a view. A view is
built over the parsed body (``wire.formats.view_for(endpoint, doc)``) and exposes

* ``units``: the history items in prefix order (Anthropic and Chat messages,
  Responses input items), each with ``.index``, ``.role`` and ``.raw``;
* ``tool_calls`` by id and ``tool_results`` in order (content, text, size,
  error flag as sent: ``True``/``False``/``None`` when absent);
* hashes of the regions that break the cache when they change
  (``system_hash``, ``tools_hash``, ``settings_hash``) and per-unit hashes
  (``unit_hashes``) for the economist, cache markers excluded;
* the TTL the request asks for and its breakpoints;
* ``replace_result_content`` (copy-on-write: the document the view was built
  over is never modified, ``view.doc`` is the rewritten one, and untouched
  messages stay the very same objects, which makes validation cheap);
* ``serialize``: deterministic compact bytes (``wire.jsoncodec.dumps``), key
  order and unknown fields preserved, so an untouched body round-trips byte
  for byte and the same edit always yields the same bytes.

Thinking blocks, tool inputs and anything the view does not understand are
never modified: the only write operation is replacing one result's content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from scalpel_desktop.wire.cache_rules import MESSAGE_CACHE_SETTINGS, marker_ttl
from scalpel_desktop.wire.hashing import canonical_bytes, digest, sha, unit_digest
from scalpel_desktop.wire.jsoncodec import dumps

ENDPOINTS = ("messages", "chat", "responses")


@dataclass
class Unit:
    """One item of history (a message, or a Responses input item)."""

    index: int
    role: str  # user | assistant | system | tool | developer | function_call | ... (Responses item type)
    raw: Any


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    input: Any  # parsed arguments (dict when they parse, else the raw value)
    unit_index: int


@dataclass(eq=False)
class ToolResult:
    id: str
    unit_index: int
    block_index: int | None  # position in the message's content list (Anthropic); None elsewhere
    name: str | None  # the tool's name from its call; None when no call carries the id
    content: Any  # the content exactly as sent (str or list)
    text: str  # the textual part of the content, for size and comparisons
    chars: int  # len(text)
    is_error: bool | None  # None when the flag is absent (or the format has none)
    images: int = 0  # image / file blocks in the content
    understood: bool = True  # False when the content holds block types we do not know


@dataclass(frozen=True)
class Breakpoint:
    region: str  # tools | system | messages | auto (top-level cache_control)
    index: int | None  # tool / system block / unit index
    block_index: int | None  # content block within the unit, when any
    ttl: str  # "5m" | "1h"


def ttl_of(cache_control: Any) -> str:
    """The TTL a marker asks for, leniently ("1h" or else "5m"): see ``wire/cache_rules.py``."""
    return marker_ttl(cache_control)


_CWD = re.compile(r"^\s*-?\s*(?:Primary working directory|Working directory):\s*(\S[^\n]*?)\s*$", re.M)


def find_cwd(texts: Iterable[str]) -> str | None:
    for t in texts:
        if isinstance(t, str) and "orking directory:" in t:
            m = _CWD.search(t)
            if m:
                return m.group(1)
    return None


class ConversationView:
    """Base class; see the module docstring. Subclasses fill the indexes in ``_index``.

    Units, tool calls and tool results are never mutated once indexed (an edit
    replaces the objects), so a view of the next request can share them for
    the messages both requests hold as the very same objects (``previous``).
    """

    endpoint = ""  # "messages" | "chat" | "responses": which ``regions`` apply
    text_block_type = "text"  # the block type a stub uses when the content is a list
    units_key = "messages"

    def __init__(self, doc: dict, previous: "ConversationView | None" = None):
        self.original_doc = doc
        self.doc = doc
        self.units: list[Unit] = []
        self.tool_calls: dict[str, ToolCall] = {}
        self.tool_results: list[ToolResult] = []
        self._result_pos: dict[str, int] = {}
        self._orig_hashes: list[bytes] | None = None
        self._orig_sizes: list[int] | None = None
        self._hash_overrides: dict[int, bytes] = {}
        self._dirty_units: set[int] = set()
        self._units_copied = False
        self._copied_units: set[int] = set()
        self.replaced: dict[str, Any] = {}  # tool_use_id -> new content
        self.reused_units = 0
        # Analyses of this view leave what the next request's can resume from (``for_next``);
        # the previous view's, when this one shares its leading units, is ``from_previous``.
        self.for_next: dict[str, Any] = {}
        self.from_previous: dict[str, Any] | None = None
        start = self._reuse(previous) if previous is not None and type(previous) is type(self) else 0
        self._index(start)
        self._orig_units = list(self.units)
        self._orig_results = list(self.tool_results)

    # -- building -----------------------------------------------------------
    def _reuse(self, prev: "ConversationView") -> int:
        """Share prev's analysis of the leading units that are the same objects; return how many."""
        old = prev.original_doc.get(self.units_key)
        new = self.doc.get(self.units_key)
        if not isinstance(old, list) or not isinstance(new, list):
            return 0
        k = 0
        n = min(len(old), len(new))
        while k < n and old[k] is new[k]:
            k += 1
        if k == 0:
            return 0
        self.units = prev._orig_units[:k]
        # Calls and results are indexed unit by unit: prev's held in units >= k are the last
        # ones (a copy, less those: no walk over the rest, with the same order).
        calls = dict(prev.tool_calls)
        while calls:
            last = next(reversed(calls))
            if calls[last].unit_index < k:
                break
            del calls[last]
        self.tool_calls = calls
        # prev's results held in units < k are a prefix of its list, and their first
        # positions (prev._result_pos) are the same here.
        res = prev._orig_results
        count = len(res)
        while count and res[count - 1].unit_index >= k:
            count -= 1
        self.tool_results = res[:count]
        pos = dict(prev._result_pos)
        for r in res[count:]:
            if pos.get(r.id, -1) >= count:
                del pos[r.id]
        self._result_pos = pos
        if prev._orig_hashes is not None and prev._orig_sizes is not None:
            self._orig_hashes = prev._orig_hashes[:k]
            self._orig_sizes = prev._orig_sizes[:k]
        self.reused_units = k
        self.from_previous = prev.for_next or None
        return k

    def _index(self, start: int = 0) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _attach_results(self, pending: list[ToolResult]) -> None:
        """Name each result after its call; a result with no call before it is an orphan we never touch."""
        for r in pending:
            call = self.tool_calls.get(r.id)
            if call is not None and call.unit_index < r.unit_index:
                r.name = call.name
            else:
                r.understood = False
            self._add_result(r)

    def _add_result(self, result: ToolResult) -> None:
        # ids are unique; should one repeat, the first stays addressable and the
        # later one is marked not understood (never cut).
        if result.id in self._result_pos:
            result.understood = False
        else:
            self._result_pos[result.id] = len(self.tool_results)
        self.tool_results.append(result)

    # -- reading ------------------------------------------------------------
    def result(self, tool_use_id: str) -> ToolResult | None:
        pos = self._result_pos.get(tool_use_id)
        return None if pos is None else self.tool_results[pos]

    def unit_hashes(self) -> list[bytes]:
        """Per-unit 16-byte digests of the current document, in prefix order, cache markers excluded."""
        hashes = self._orig_hashes
        if hashes is None or len(hashes) < len(self._orig_units):
            self._measure()
            hashes = self._orig_hashes
            assert hashes is not None
        for i in self._dirty_units:
            u = self.units[i]
            self._hash_overrides[i] = unit_digest(u.raw, self._canonical_unit(u.raw))
        self._dirty_units.clear()
        if not self._hash_overrides:
            return list(hashes)
        out = list(hashes)
        for i, h in self._hash_overrides.items():
            out[i] = h
        return out

    def unit_sizes(self) -> list[int]:
        """Compact JSON bytes of each original unit (cache markers excluded), from the same pass as the hashes."""
        if self._orig_sizes is None or len(self._orig_sizes) < len(self._orig_units):
            self._measure()
        assert self._orig_sizes is not None
        return list(self._orig_sizes)

    def _measure(self) -> None:
        hashes = list(self._orig_hashes or [])
        sizes = list(self._orig_sizes or [])
        n = min(len(hashes), len(sizes))
        del hashes[n:], sizes[n:]
        for u in self._orig_units[n:]:
            canonical = self._canonical_unit(u.raw)
            data = canonical_bytes(u.raw if canonical is None else canonical)
            hashes.append(digest(data))
            sizes.append(len(data))
        self._orig_hashes, self._orig_sizes = hashes, sizes

    def _canonical_unit(self, raw: Any) -> Any:
        return None

    def system_hash(self) -> str:
        return sha(canonical_bytes(regions(self.endpoint, self.doc)[0]))

    def tools_hash(self) -> str:
        return sha(canonical_bytes(regions(self.endpoint, self.doc)[1]))

    def settings_hash(self) -> str:
        return sha(canonical_bytes(regions(self.endpoint, self.doc)[2]))

    def _settings_keys(self) -> tuple[str, ...]:
        return ("tool_choice",)

    def breakpoints(self) -> list[Breakpoint]:
        return []

    def ttl(self) -> str | None:
        """The longest TTL any breakpoint asks for ("1h" beats "5m"); None without breakpoints."""
        bps = self.breakpoints()
        if not bps:
            return None
        return "1h" if any(b.ttl == "1h" for b in bps) else "5m"

    def cwd(self) -> str | None:
        return None

    # -- writing ------------------------------------------------------------
    def replace_result_content(self, tool_use_id: str, new_content: Any) -> None:
        """Replace one result's content (copy-on-write). KeyError for an unknown id."""
        pos = self._result_pos.get(tool_use_id)
        if pos is None:
            raise KeyError(tool_use_id)
        res = self.tool_results[pos]
        self._write_content(res, new_content)
        text, images, understood = self._describe(new_content)
        self.tool_results[pos] = ToolResult(
            res.id, res.unit_index, res.block_index, res.name, new_content, text, len(text), res.is_error, images, understood
        )
        self.replaced[tool_use_id] = new_content
        self._dirty_units.add(res.unit_index)

    def adopt(self, previous: "ConversationView", ids: "set[str] | frozenset[str]") -> int:
        """Take over ``previous``'s rewritten units among the shared ones, where every
        replacement in the unit is one of ``ids`` (cuts known to be committed).

        The rewritten unit objects are shared, not copied (nothing mutates them);
        this is what makes re-applying hundreds of logged cuts per request cheap.
        Returns the number of results taken over.
        """
        if previous is None or type(previous) is not type(self) or not previous.replaced:
            return 0
        by_unit: dict[int, list[str]] = {}
        for tid in previous.replaced:
            r = previous.result(tid)
            if r is not None and r.unit_index < self.reused_units:
                by_unit.setdefault(r.unit_index, []).append(tid)
        n = 0
        for i, tids in by_unit.items():
            if any(t not in ids or t in self.replaced for t in tids) or i in self._copied_units:
                continue
            if not self._units_copied:
                self.doc = dict(self.doc)
                self.doc[self.units_key] = list(self.doc[self.units_key])
                self._units_copied = True
            self.doc[self.units_key][i] = previous.doc[previous.units_key][i]
            self.units[i] = previous.units[i]
            for t in tids:
                self.tool_results[self._result_pos[t]] = previous.result(t)  # type: ignore[assignment]
                self.replaced[t] = previous.replaced[t]
                n += 1
            self._dirty_units.add(i)
        return n

    def _own_unit(self, unit_index: int) -> dict:
        """Make the unit at ``unit_index`` (and the containers above it) private copies."""
        if not self._units_copied:
            self.doc = dict(self.doc)
            self.doc[self.units_key] = list(self.doc[self.units_key])
            self._units_copied = True
        items = self.doc[self.units_key]
        if unit_index not in self._copied_units:
            items[unit_index] = dict(items[unit_index])
            self._copied_units.add(unit_index)
            old = self.units[unit_index]
            self.units[unit_index] = Unit(old.index, old.role, items[unit_index])
        return items[unit_index]

    def _write_content(self, res: ToolResult, new_content: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    def _describe(self, content: Any) -> tuple[str, int, bool]:  # pragma: no cover
        raise NotImplementedError

    def serialize(self) -> bytes:
        return dumps(self.doc)


SYSTEM_ROLES = ("system", "developer")  # OpenAI Chat's leading instruction messages


def regions(endpoint: str, doc: Any) -> tuple[Any, Any, dict[str, Any]]:
    """(system, tools, settings) of a request: what sits before the history and breaks
    the cache when it changes. One choice per format, for the views' hashes and for
    the surgery stage's fast path (which has no view)."""
    if endpoint == "messages":
        system = doc.get("system")
        if isinstance(system, str):  # a string is the one text block it stands for
            system = [{"type": "text", "text": system}]
        return system, doc.get("tools"), {k: doc.get(k) for k in MESSAGE_CACHE_SETTINGS}
    if endpoint == "chat":
        lead = []
        for m in doc.get("messages") or []:
            if not (isinstance(m, dict) and m.get("role") in SYSTEM_ROLES):
                break
            lead.append(m)
        settings = {k: doc.get(k) for k in ("tool_choice", "parallel_tool_calls", "reasoning_effort")}
        return lead, [doc.get("tools"), doc.get("functions")], settings
    settings = {k: doc.get(k) for k in ("tool_choice", "parallel_tool_calls", "reasoning")}
    return doc.get("instructions"), doc.get("tools"), settings
