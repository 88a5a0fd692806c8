"""One JSON codec for request bodies: orjson, compact, raw UTF-8.

``dumps`` produces the same bytes as ``json.dumps(obj, separators=(",", ":"),
ensure_ascii=False)`` for everything Claude Code sends (strings, ints, bools,
null; floats can differ, e.g. ``1e16``), which is how Claude Code serializes
its bodies. Before the pipeline changes a body it checks ``round_trips``:
a body this codec does not reproduce byte for byte is forwarded untouched.
"""

from __future__ import annotations

import gc
from typing import Any

import orjson

JSONDecodeError = orjson.JSONDecodeError

# Above this size a parse runs with the cyclic garbage collector paused (see ``loads``).
GC_PAUSE_BYTES = 256 * 1024


def loads(data: bytes | str) -> Any:
    """The parsed document. A large body is parsed with the cyclic GC paused: a 3 MB
    Claude Code body of thousands of messages is tens of thousands of dicts and lists,
    each allocation counting towards a collection, and with a few such documents alive
    (the memo, parse-reuse) a full collection walks them all: 5x the parse itself, on
    the request path. Parsed JSON holds no reference cycles (refcounting frees it), so
    nothing is left for a collection to find; collections resume right after."""
    if len(data) < GC_PAUSE_BYTES or not gc.isenabled():
        return orjson.loads(data)
    gc.disable()
    try:
        return orjson.loads(data)
    finally:
        gc.enable()


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def too_deep(error: BaseException) -> bool:
    """Did ``error`` come from a document nested deeper than the codec writes back?
    orjson reads 1024 levels but writes only 254, so such a body parses and then
    fails in the first ``dumps``: the pipeline treats it as a body it cannot understand."""
    return isinstance(error, RecursionError) or (
        isinstance(error, orjson.JSONEncodeError) and "recursion limit" in str(error).lower())


def round_trips(raw: bytes, obj: Any) -> bool:
    """True when re-serializing ``obj`` (parsed from ``raw``) gives ``raw`` back exactly."""
    try:
        return orjson.dumps(obj) == raw
    except TypeError:
        return False
