"""m009: each ledger row's own id, so that a row is never written twice.

``requests.uid`` is a random hex id the writer gives a row when it is
submitted (``store/ledger.py``). A row that waited in the journal beside the
ledger while the database was locked (``store/row_journal.py``) may also have
reached the database before a crash; replaying the journal inserts with
``INSERT OR IGNORE``, and the unique index makes the second copy a no-op.
Rows written before m009 keep a NULL uid (NULLs never collide).
"""


def apply(conn) -> None:
    have = {r[1] for r in conn.execute("PRAGMA table_info(requests)")}
    if "uid" not in have:
        conn.execute("ALTER TABLE requests ADD COLUMN uid TEXT")
    conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS requests_uid ON requests (uid)")
