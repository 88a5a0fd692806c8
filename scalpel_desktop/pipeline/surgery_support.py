"""Small pieces of the surgery stage: settings, TTL, exclusion, validity, realized savings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from scalpel_desktop.surgery.economist import LONGEST_TTL_S, ttl_seconds


@dataclass
class Sent:
    """What the stage remembers of one request until its response ends."""

    serial: int
    key: Any
    model: str
    stubs: list[tuple[str, float, int, str]] = field(default_factory=list)  # (id, position 0..1, tokens saved, new|replayed)
    rewrite_tokens: int = 0


def setting(config: Any, name: str) -> Any:
    """A live setting from a Config or a plain dict (missing keys: the default)."""
    if isinstance(config, dict):
        from scalpel_desktop.config import KEYS

        return config.get(name, KEYS[name].default)
    return config.get(name)


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


def rewrite_problem(view: Any) -> str:
    """Why the rewritten view may not be sent ('' when it may)."""
    try:
        from scalpel_desktop.surgery.validate import validate_rewrite
    except ImportError:
        return "no validator available"
    try:
        problems = validate_rewrite(view.original_doc, view.doc)
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
