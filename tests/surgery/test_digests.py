"""surgery/digests.py: packed unit hashes read like the tuple they replace, and the economist keeps them packed."""

from __future__ import annotations

import hashlib

import pytest

from scalpel_desktop.surgery.digests import SIZE, Digests, common_prefix_packed, ids_of, packed, packed_ids
from scalpel_desktop.surgery.economist import Economist
from scalpel_desktop.surgery.plan import RequestShape, common_prefix


def _hashes(n: int, salt: str = "") -> tuple[bytes, ...]:
    return tuple(hashlib.sha256(f"{salt}{i}".encode()).digest()[:SIZE] for i in range(n))


def test_a_packed_sequence_reads_as_the_tuple_it_stands_for():
    t = _hashes(50)
    d = packed(t)
    assert isinstance(d, Digests) and len(d.blob) == 50 * SIZE
    assert len(d) == 50 and tuple(d) == t and list(d) == list(t)
    assert d[0] == t[0] and d[-1] == t[-1] and d[17] == t[17]
    assert d[10:20] == t[10:20] and isinstance(d[10:20], Digests) and tuple(d[10:20]) == t[10:20]
    assert d[:0] == () and tuple(d[40:100]) == t[40:] and d[::2] == t[::2]
    assert d == t and t == d and d == list(t) and d != t[:-1] and d != _hashes(50, "x")
    assert hash(d) == hash(t)
    with pytest.raises(IndexError):
        d[50]
    with pytest.raises(ValueError):
        Digests(b"x" * (SIZE + 1))


@pytest.mark.parametrize("hashes", [(), ("a", "b"), (1, 2, 3), (b"short", b"x" * SIZE),
                                    (b"x" * (SIZE - 1), b"y" * (SIZE + 1)), (b"x" * SIZE, "s")])
def test_anything_but_whole_digests_stays_a_tuple(hashes):
    got = packed(hashes)
    assert type(got) is tuple and got == tuple(hashes)


@pytest.mark.parametrize("n_a,n_b,differ_at", [(100, 101, None), (101, 100, None), (100, 100, None),
                                               (100, 120, 0), (100, 120, 57), (100, 120, 99), (1, 1, 0),
                                               (0, 5, None)])
def test_the_common_prefix_of_packed_hashes_is_the_tuples_one(n_a, n_b, differ_at):
    a = list(_hashes(n_a))
    b = list(_hashes(n_b))
    if differ_at is not None:
        b[differ_at] = hashlib.sha256(b"other").digest()[:SIZE]
    want = common_prefix(tuple(a), tuple(b))  # the plain tuple path
    assert want == (min(n_a, n_b) if differ_at is None else differ_at)
    pa, pb = Digests(b"".join(a)), Digests(b"".join(b))
    assert common_prefix_packed(pa, pb) == want
    assert common_prefix(pa, tuple(b)) == common_prefix(tuple(a), pb) == common_prefix(pa, pb) == want
    assert common_prefix(pa, ("a",) * n_b) == 0  # a tuple of other hashables: compared one by one


def test_the_economist_keeps_the_hashes_it_was_sent_packed_and_reads_them_back():
    eco = Economist({})
    units = _hashes(300)
    shape = RequestShape(key=("s", ""), model="m", at=1000.0, unit_hashes=units)
    eco.record_sent(shape, units)
    kept = eco.conversations[("s", "")].models["m"][-1].unit_hashes
    assert isinstance(kept, Digests) and tuple(kept) == units
    nxt = RequestShape(key=("s", ""), model="m", at=1001.0, unit_hashes=units + _hashes(2, "new"))
    brk = eco.natural_break(nxt)
    assert (brk.index, brk.reason) == (300, "append")  # everything the packed state holds is shared
    rewritten = RequestShape(key=("s", ""), model="m", at=1001.0,
                             unit_hashes=units[:120] + _hashes(200, "other"))
    brk = eco.natural_break(rewritten)
    assert (brk.index, brk.reason) == (120, "client-rewrite")


@pytest.mark.parametrize("ids", [(), ("toolu_01a", "toolu_01b", "toolu_01a"), ("x\u0000y", "\u2192 é")])
def test_ids_are_packed_into_one_bytes_object_and_read_back(ids):
    got = packed_ids(ids)
    assert isinstance(got, bytes) and ids_of(got) == frozenset(ids)


def test_ids_that_do_not_serialise_stay_a_set():
    ids = ("a", 1)  # not sortable together: kept as they are
    got = packed_ids(ids)
    assert got == frozenset(ids) and ids_of(got) == frozenset(ids)


def test_the_economist_keeps_the_dead_ids_of_its_last_decision_packed():
    from scalpel_desktop.surgery.plan import Candidate

    eco = Economist({"policy": "death"})
    units = _hashes(40)
    shape = RequestShape(key=("s", ""), model="m", at=1000.0, unit_hashes=units,
                         unit_tokens=[100] * 40, total_tokens=4000)
    eco.record_sent(shape, units)
    eco.decide(shape, [Candidate("toolu_dead", 3, 500, 10, "read")], policy="death")
    kept = eco.conversations[("s", "")].dead_seen
    assert isinstance(kept, bytes) and ids_of(kept) == frozenset({"toolu_dead"})
