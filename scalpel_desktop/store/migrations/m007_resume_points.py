"""m007: what a first sighting after a restart needs to know of its conversation (issue 26).

Per answered request of a conversation endpoint, the surgery stage records
what the economist knew of the prefix it sent: ``prefix_units`` (messages
covered by the digest: every message but the last, which the client may
rewrite), ``prefix_digest`` (a hex SHA-256 of the system, tools and settings
hashes and those messages' hashes, as sent after the cuts: never content),
``ttl_s`` (the TTL its markers asked for) and ``answered_at`` (when its
response ended: the TTL runs from there). The latest row of a conversation
and model is its resume point (``store/resume_points.py``).
"""


def apply(conn) -> None:
    have = {r[1] for r in conn.execute("PRAGMA table_info(requests)")}
    for name, kind in (("prefix_units", "INTEGER"), ("prefix_digest", "TEXT"), ("ttl_s", "REAL"),
                       ("answered_at", "REAL")):
        if name not in have:
            conn.execute(f"ALTER TABLE requests ADD COLUMN {name} {kind}")
