"""Small pieces of the surgery stage: settings, TTL, exclusion, validity, realized savings,
and the byte-level shortcuts of its full path (round trip, stub offsets)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from scalpel_desktop.pipeline.conversation_memo import Layout
from scalpel_desktop.surgery.economist import LONGEST_TTL_S, ttl_seconds
from scalpel_desktop.wire.jsoncodec import dumps


@dataclass
class Sent:
    """What the stage remembers of one request until its response ends."""

    serial: int
    key: Any
    model: str
    stubs: list[tuple[str, float, int, str]] = field(default_factory=list)  # (id, position 0..1, tokens saved, new|replayed)
    rewrite_tokens: int = 0


def excluded(cwd: str | None, dirs: list[str] | None) -> bool:
    """True when ``cwd`` is one of ``dirs`` or below one."""
    if not cwd or not dirs:
        return False
    cwd_n = os.path.normpath(os.path.expanduser(cwd))
    for d in dirs:
        d_n = os.path.normpath(os.path.expanduser(str(d)))
        if cwd_n == d_n or cwd_n.startswith(d_n.rstrip("/") + "/"):
            return True
    return False


def _marker_ttls(blocks: Any, out: list[str]) -> None:
    if not isinstance(blocks, list):
        return
    for b in blocks:
        if not isinstance(b, dict):
            continue
        cc = b.get("cache_control")
        if isinstance(cc, dict):
            out.append("1h" if cc.get("ttl") == "1h" else "5m")
        inner = b.get("content")
        if isinstance(inner, list):
            _marker_ttls(inner, out)


def message_ttl_s(endpoint: str, doc: dict) -> float:
    """The TTL of the entries a cut touches (the messages'); when unsure, the longer.

    Claude Code marks the last message (older versions: the last two), so only
    the last messages and a top-level marker are looked at; without any, the
    system's markers; without those, the longest TTL.
    """
    if endpoint != "messages":
        return 86400.0 if doc.get("prompt_cache_retention") == "24h" else LONGEST_TTL_S
    ttls: list[str] = []
    auto = doc.get("cache_control")
    if isinstance(auto, dict):
        ttls.append("1h" if auto.get("ttl") == "1h" else "5m")
    msgs = doc.get("messages") or []
    for m in msgs[-3:]:
        if isinstance(m, dict):
            _marker_ttls(m.get("content"), ttls)
    if not ttls:
        _marker_ttls(doc.get("system"), ttls)
    if not ttls:
        return ttl_seconds(None)
    return ttl_seconds("1h" if "1h" in ttls else "5m")


def api_problem(view: Any) -> str:
    """The emulated API's own 400 checks on the rewritten body. A problem the
    client's original already had is the client's, and no reason to refuse."""
    from scalpel_desktop.emulator import validate as api

    check = {"messages": api.validate_messages_body, "chat": api.validate_chat_body,
             "responses": api.validate_responses_body}.get(view.endpoint)
    if check is None:
        return ""
    try:
        check(view.doc)
        return ""
    except api.ApiError as e:
        new = e.message
    try:
        check(view.original_doc)
    except api.ApiError as e:
        if e.message == new:
            return ""
    return f"the API would refuse it: {new}"


def rewritten_pairs(view: Any) -> list[tuple[Any, Any]]:
    """(original unit, rewritten unit) of every unit ``view`` rewrote: once its rewrite
    passed ``validate_rewrite``, each pair is known good (units are never mutated)."""
    if view is None or not getattr(view, "replaced", None):
        return []
    old, new = view.original_doc.get(view.units_key), view.doc.get(view.units_key)
    if not isinstance(old, list) or not isinstance(new, list) or len(old) != len(new):
        return []
    units = {r.unit_index for r in (view.result(t) for t in view.replaced) if r is not None}
    return [(old[i], new[i]) for i in sorted(units) if old[i] is not new[i]]


def rewrite_problem(view: Any, validated: Any = None) -> str:
    """Why the rewritten view may not be sent ('' when it may).

    ``validated``: the conversation's previous view, whose rewrite passed this
    very check; its rewritten units that recur here (the same objects) are
    not compared again."""
    try:
        from scalpel_desktop.surgery.validate import validate_rewrite
    except ImportError:
        return "no validator available"
    try:
        problems = validate_rewrite(view.original_doc, view.doc, validated=rewritten_pairs(validated))
    except Exception as e:  # noqa: BLE001
        return f"validator error {type(e).__name__}: {e}"
    if problems:
        return "; ".join(str(p) for p in problems)[:300]
    return api_problem(view)


def realized(prices: Any, sent: Sent, usage: Any) -> tuple[int, float]:
    """Tokens and dollars saved, each token at the rate its position was billed at (SPEC 7):
    the cache-read rate inside the part read from cache, the write rate inside the
    part written (1h entries come before 5m ones), the input rate after it."""
    rates = prices.rates(sent.model).for_prompt(usage.prompt_tokens)
    total = usage.prompt_tokens
    read_end = usage.cache_read
    w1h_end = read_end + usage.cache_write_1h
    w_end = w1h_end + usage.cache_write_5m
    tokens = 0
    usd = 0.0
    for _, frac, saved, _ in sent.stubs:
        at = frac * total
        if at < read_end:
            rate = rates.cache_read
        elif at < w1h_end:
            rate = rates.write_1h
        elif at < w_end:
            rate = rates.write_5m
        else:
            rate = rates.input
        tokens += saved
        usd += saved * rate
    if sent.rewrite_tokens:
        # A warm (payback) cut re-wrote what would have been read: charge it here.
        write = rates.write_1h if usage.cache_write_1h >= usage.cache_write_5m else rates.write_5m
        usd -= sent.rewrite_tokens * (write - rates.cache_read)
    return tokens, round(usd, 9)


def int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def round_trips_by_layout(raw: bytes, doc: Any, layout: Layout | None, full: Any) -> bool:
    """``full(raw, doc)`` (``dumps(doc) == raw``) without re-serializing every message.

    ``layout`` already proved each message serializes to exactly the bytes it
    sits at, comma-separated, up to the closing bracket. What is left: the rest
    of the document. It is serialized with a marker in place of the messages;
    the bytes before and after the marker must be those around the messages.
    """
    msgs = doc.get("messages") if isinstance(doc, dict) else None
    if layout is None or not isinstance(msgs, list) or len(layout.ends) != len(msgs) or not msgs:
        return full(raw, doc)
    start = layout.ends[0] - layout.sizes[0] - 1  # the '[' that opens the messages
    end = layout.ends[-1] + 1  # just past the ']' that closes them
    if start < 0 or raw[start:start + 1] != b"[" or raw[end - 1:end] != b"]":
        return full(raw, doc)
    shell = dict(doc)
    shell["messages"] = _MARK
    try:
        data = dumps(shell)
    except TypeError:
        return full(raw, doc)
    at = data.find(_MARK_BYTES)
    if at == start and data.find(_MARK_BYTES, at + 1) < 0 and data[:at] == raw[:start] \
            and data[at + len(_MARK_BYTES):] == raw[end:]:
        return True  # proven: the shell's bytes around the messages, the layout's bytes for them
    return full(raw, doc)  # anything else: the whole check decides


_MARK = "\u0000scalpel-messages\u0000"
_MARK_BYTES = dumps(_MARK)


_RESULT_KEY = b'"tool_use_id":"'
_PLAIN_ID = re.compile(rb'[^"\\\x00-\x1f]+')


def first_result_offsets(body: bytes) -> dict[bytes, int]:
    """{id bytes: offset of the first ``"tool_use_id":"<id>"`` in ``body``}, in ONE pass.

    Equal to ``body.find(b'"tool_use_id":"' + id + b'"')`` for every id free of
    quotes, backslashes and control bytes (the scan reads an id up to the next
    quote), but linear in the body instead of one whole-body search per stub:
    a conversation with hundreds of stubs paid ~15 ms at 2.9 MB for those.
    """
    first: dict[bytes, int] = {}
    at = body.find(_RESULT_KEY)
    n = len(_RESULT_KEY)
    while at >= 0:
        start = at + n
        end = body.find(b'"', start)
        if end < 0:
            break
        first.setdefault(body[start:end], at)
        at = body.find(_RESULT_KEY, at + 1)
    return first


def stub_positions(body: bytes, view: Any, replayed: dict[str, int], cuts: list) -> list[tuple]:
    """(id, byte offset in the sent body, tokens saved, new|replayed, unit) of each stub."""
    items = [(tid, saved, "replayed") for tid, saved in replayed.items()]
    # The same figure for a new cut and for its replays: the stub is at most STUB_TOKENS.
    from scalpel_desktop.surgery.doom import STUB_TOKENS

    items += [(c.tool_use_id, max(0, c.tokens - STUB_TOKENS), "new") for c in cuts]
    first = first_result_offsets(body) if items else {}
    out = []
    for tid, saved, kind in items:
        needle = tid.encode("utf-8")
        if _PLAIN_ID.fullmatch(needle):
            pos = first.get(needle, -1)
        else:  # an id the one-pass scan cannot take apart: search for it as before
            pos = body.find(_RESULT_KEY + needle + b'"')
        if pos < 0:
            pos = body.find(b'"' + needle + b'"')
        r = view.result(tid)
        out.append((tid, pos if pos >= 0 else len(body), int(saved), kind, r.unit_index if r else -1))
    return out
