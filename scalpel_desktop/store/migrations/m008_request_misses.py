"""m008: a request's cache miss, found by the proxy (issue 24, ``pipeline/miss_watch.py``).

Per answered Messages request whose cache read fell short of what its
conversation had cached for that model (by more than the model's minimum
cacheable length): ``miss_cause`` (one of ``accounting/misses.CAUSES``),
``miss_tokens`` (the tokens re-written), ``miss_usd`` (their cost: tokens x
(write - read) at the request's TTL, from the price table) and ``miss_detail``
(JSON: the gap and TTL, the break the economist saw, which tool names or
setting fields changed; names and numbers only, never content). Where the
read stopped is the row's own ``cache_read``. NULL: no miss.
"""


def apply(conn) -> None:
    have = {r[1] for r in conn.execute("PRAGMA table_info(requests)")}
    for name, kind in (("miss_cause", "TEXT"), ("miss_tokens", "INTEGER"), ("miss_usd", "REAL"),
                       ("miss_detail", "TEXT")):
        if name not in have:
            conn.execute(f"ALTER TABLE requests ADD COLUMN {name} {kind}")
