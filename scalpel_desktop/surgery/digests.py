"""What the economist keeps per conversation for turns, packed: its unit hashes, its dead ids.

Why: a conversation's state outlives the request that built it by as many
requests as there are other conversations, and its unit hashes were one
16-byte ``bytes`` object per message (about 64 bytes each in pymalloc),
allocated in the middle of that request's parse, layout and view. pymalloc
gives an arena (1 MiB) back only when every object in it is freed, so these
few hundred KB of survivors, scattered over the arenas the request's 15 MB
of transient document and view filled, kept those arenas alive long after
the document was gone: ``benchmarks/proxy_memory.py`` (ten 2.6 MB
conversations of ~7,900 messages in turn) showed 74 pymalloc arenas holding
35 MB of objects and 33 MB of empty pools (``SCALPEL_MEMTRACE_FRAMES=0``,
``proxy/memtrace.py``). Packed, the same hashes are one allocation of 16
bytes a message outside pymalloc's small-object arenas. The same goes for the
ids of the results found dead at the conversation's last decision (what the
death policy compares the next decision with): a few hundred of the
document's own id strings, kept alive past it; packed, one JSON array.

``Digests`` reads like the tuple it replaces (length, index, slice,
iteration, equality with a tuple of the same hashes); ``packed`` packs a
sequence only when every hash is a 16-byte ``bytes`` (other hashables, as
tests and other formats may give, stay a tuple); ``common_prefix`` of two
packed sequences compares their bytes at once. ``packed_ids`` / ``ids_of``
pack a set of ids and read it back (a set that does not serialise stays as
it is).
"""

from __future__ import annotations

from typing import Any, Hashable, Iterable, Iterator, Sequence

from scalpel_desktop.wire.jsoncodec import dumps, loads

SIZE = 16  # ``wire.hashing.digest``: the first 16 bytes of a SHA-256


class Digests(Sequence[bytes]):
    """Hashes of ``SIZE`` bytes each, end to end in one ``bytes``."""

    __slots__ = ("blob",)

    def __init__(self, blob: bytes):
        if len(blob) % SIZE:
            raise ValueError(f"{len(blob)} bytes are not a whole number of {SIZE}-byte hashes")
        self.blob = blob

    def __len__(self) -> int:
        return len(self.blob) // SIZE

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step == 1:
                return Digests(self.blob[start * SIZE:max(start, stop) * SIZE])
            return tuple(self[j] for j in range(start, stop, step))
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("Digests index out of range")
        return self.blob[i * SIZE:(i + 1) * SIZE]

    def __iter__(self) -> Iterator[bytes]:
        blob = self.blob
        return (blob[i:i + SIZE] for i in range(0, len(blob), SIZE))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Digests):
            return self.blob == other.blob
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))  # as the tuple it stands for

    def __repr__(self) -> str:
        return f"Digests({len(self)} hashes)"


def packed(hashes: Sequence[Hashable]) -> Digests | tuple:
    """``hashes`` as one ``Digests`` when every one is ``SIZE`` bytes; else a tuple (as before)."""
    if isinstance(hashes, Digests):
        return hashes
    try:
        blob = b"".join(hashes)  # type: ignore[arg-type] - anything but bytes-like raises
    except TypeError:
        return tuple(hashes)
    n = len(hashes)
    if n and len(blob) == SIZE * n and min(map(len, hashes)) == SIZE:  # (all SIZE: none shorter, none longer)
        return Digests(blob)
    return tuple(hashes)


def common_prefix_packed(a: Digests, b: Digests) -> int:
    """How many leading hashes ``a`` and ``b`` share (one comparison when one extends the other)."""
    n = min(len(a), len(b))
    if a.blob[:n * SIZE] == b.blob[:n * SIZE]:
        return n
    lo, hi = 0, n  # the first ``lo`` are shared, the first ``hi`` are not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a.blob[:mid * SIZE] == b.blob[:mid * SIZE]:
            lo = mid
        else:
            hi = mid
    return lo


def packed_ids(ids: Iterable[Hashable]) -> bytes | frozenset:
    """A set of ids as one JSON array (``ids_of`` reads it back); a frozenset when they do not serialise."""
    kept = frozenset(ids)
    try:
        return dumps(sorted(kept))  # type: ignore[type-var]
    except (TypeError, ValueError):  # (orjson's encode error is a TypeError)
        return kept


def ids_of(packed: bytes | frozenset) -> frozenset:
    """The set ``packed_ids`` packed."""
    return frozenset(loads(packed)) if isinstance(packed, bytes) else packed
