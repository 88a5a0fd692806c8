"""A fold over a conversation's messages, resumed from its previous request's: O(new messages).

Why: a warm request repeats its previous one's messages and adds a few, yet
every pass that sums or collects something over the messages walked all of
them again (issue 25: the context regions' tool-result characters, about
4 ms a request at 9,000 messages; the skill listings, about 3 ms).

``PrefixFold(each, add, zero)`` folds ``each(message)`` over the messages
with ``add``. Per key it keeps the folded value of the previous request's
first ``n`` and ``n - 1`` messages (the last message is the one a client
rewrites: its marker moves), each with the hash of those messages' digests
(``wire.layout.Layout.hashes``; the same digests mean the same messages,
cache markers aside, so ``each`` must not read a marker). A request whose
digests start with one of those prefixes folds only the messages after it
(its own last message always: a retry folds one);
anything else (no digests, another history, a shorter one) folds them all,
so the value is always the full fold's. ``size`` keys at most, least
recently used dropped first; what a key keeps is two values and two numbers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Generic, Hashable, Sequence, TypeVar

T = TypeVar("T")
DIGEST_SIZE = 16  # ``wire.hashing.digest``


class PrefixFold(Generic[T]):
    def __init__(self, each: Callable[[Any], T], add: Callable[[T, T], T], zero: T, size: int = 64):
        self.each, self.add, self.zero, self.size = each, add, zero, size
        self._items: OrderedDict[Hashable, tuple[tuple[int, int, T], ...]] = OrderedDict()
        self._lock = threading.Lock()  # (completions of different conversations run side by side)
        self.resumed = 0  # requests that folded only their new messages (tests, benchmarks)

    def full(self, messages: Sequence[Any]) -> T:
        """The fold over every message (the reference the resumed value equals)."""
        return self._fold(self.zero, messages, 0, len(messages))

    def value(self, key: Hashable | None, messages: Any, hashes: Sequence[bytes] | None) -> T:
        """The fold over ``messages``; ``hashes``: their digests (None: fold them all, keep nothing)."""
        if not isinstance(messages, list):
            return self.zero
        blob = _blob(hashes, len(messages)) if key is not None else None
        if blob is None:
            return self.full(messages)
        n = len(messages)
        if not n:
            return self.zero
        with self._lock:
            marks = self._items.get(key, ())
        start, base = 0, self.zero
        for upto, digest, value in marks:  # (the longest first; never the last message, folded below)
            if 0 < upto < n and hash(blob[:upto * DIGEST_SIZE]) == digest:
                start, base = upto, value
                self.resumed += 1
                break
        before_last = self._fold(base, messages, start, n - 1)
        total = self.add(before_last, self.each(messages[-1]))
        new: tuple = ((n, hash(blob), total),)
        if n > 1:
            new += ((n - 1, hash(blob[:(n - 1) * DIGEST_SIZE]), before_last),)
        with self._lock:
            self._items[key] = new
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return total

    def _fold(self, acc: T, messages: Sequence[Any], start: int, stop: int) -> T:
        each, add = self.each, self.add
        for i in range(start, stop):
            acc = add(acc, each(messages[i]))
        return acc


def _blob(hashes: Sequence[bytes] | None, n: int) -> bytes | None:
    """The digests end to end, when they are ``n`` digests of ``DIGEST_SIZE`` bytes; else None."""
    if hashes is None or len(hashes) != n:
        return None
    blob = getattr(hashes, "blob", None)  # (packed already: ``surgery/digests.Digests``)
    if not isinstance(blob, bytes):
        try:
            blob = b"".join(hashes)
        except TypeError:
            return None
    return blob if len(blob) == DIGEST_SIZE * n else None
