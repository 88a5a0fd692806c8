"""What the economist keeps over a long day, with and without letting go of expired conversations.

Run: ``python benchmarks/economist_memory.py [--conversations 100] [--messages 2000] [--hours 10]``

The economist (``surgery/economist.py``) keeps per conversation what it last
sent to each model (16 bytes a message, packed) and where its cache entries
end (up to 64 marks a model), and it kept them for every conversation it
ever saw, for as long as the proxy ran (the tray runs it for days).
``Economist.forget_cold`` lets go of a conversation's states and marks once
every one of its caches has expired. This feeds one economist, side by side
with and without it, the same day: ``--conversations`` conversations started
evenly over ``--hours`` hours, each 20 requests a minute apart growing to
``--messages`` messages (5-minute TTL, a side request to a small model
every fifth turn), and prints what the economist holds
at the end of each hour (the size of every object reachable from its
conversations). Nothing is asserted; synthetic shapes, so the
figures are of the economist's own state, not of a real proxy's RSS.
"""

from __future__ import annotations

import argparse
import gc
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xxhash import xxh3_128_digest  # noqa: E402

from scalpel_desktop.accounting.prices import PriceTable  # noqa: E402
from scalpel_desktop.surgery.economist import Economist  # noqa: E402
from scalpel_desktop.surgery.plan import RequestShape  # noqa: E402

MAIN, SIDE = "claude-opus-4-5", "claude-haiku-4-5"


def _events(conversations: int, messages: int, hours: float) -> list[tuple[float, int, int, str]]:
    """(send time, conversation, messages, model), in time order."""
    out = []
    for c in range(conversations):
        start = c * hours * 3600.0 / max(1, conversations)
        for turn in range(20):
            n = max(2, messages * (turn + 1) // 20)
            out.append((start + 60.0 * turn, c, n, MAIN))
            if turn % 5 == 4:
                out.append((start + 60.0 * turn + 5.0, c, 4, SIDE))
    return sorted(out)


def _held(economist: Economist) -> int:
    """Bytes of everything reachable from the economist's conversations (``sys.getsizeof`` over
    the object graph, each object once; classes, functions and modules not followed)."""
    seen: set[int] = set()
    todo: list = [economist.conversations]
    total = 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType, types.FunctionType)):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        todo.extend(gc.get_referents(obj))
    return total


def run(conversations: int, messages: int, hours: float, forget: bool) -> list[tuple[int, int, int]]:
    """[(hour, bytes held, conversations with state)] at the end of each hour."""
    e = Economist({"policy": "death", "ttl_margin_s": 30}, PriceTable.builtin())
    out = []
    hour = 1
    for at, c, n, model in _events(conversations, messages, hours):
        while at >= hour * 3600.0:
            out.append((hour, _held(e), sum(1 for s in e.conversations.values() if any(s.models.values()))))
            hour += 1
        hashes = tuple(xxh3_128_digest(f"{c}:{i}".encode()) for i in range(n))
        shape = RequestShape(key=(f"s{c}", ""), model=model, at=at, unit_hashes=hashes, tools_hash="T",
                             system_hash="S", settings_hash="X", ttl_s=300.0, total_tokens=n * 100)
        serial = e.record_sent(shape)
        e.record_finished(shape.key, model, serial, at + 2.0, cache_read=n * 90, cache_written=n * 10)
        if forget:
            e.forget_cold(at)
    out.append((hour, _held(e), sum(1 for s in e.conversations.values() if any(s.models.values()))))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=100)
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--hours", type=float, default=10.0)
    a = ap.parse_args(argv)
    kept = run(a.conversations, a.messages, a.hours, forget=False)
    let_go = run(a.conversations, a.messages, a.hours, forget=True)
    print(f"economist state, {a.conversations} conversations of up to {a.messages:,} messages over "
          f"{a.hours:g} hours (KB reachable from its conversations; conversations holding state):")
    print()
    print("| hour | kept whole | let go once expired |")
    print("|---:|---:|---:|")
    for (h, b1, n1), (_, b2, n2) in zip(kept, let_go):
        print(f"| {h} | {b1 / 1024:,.0f} ({n1}) | {b2 / 1024:,.0f} ({n2}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
