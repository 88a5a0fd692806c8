"""m001: the savings ledger, one row per proxied API request.

Only counts, sizes, timings, short labels and identifiers live here: never
message content, never header values (the user agent excepted, truncated),
never credentials. Usage columns are NULL when the response carried no usage.
``figures`` is JSON of numbers and short labels only. See docs/ledger.md.
"""

SQL = """
CREATE TABLE IF NOT EXISTS requests (
    id                INTEGER PRIMARY KEY,
    ts                REAL,               -- request received, epoch seconds
    session           TEXT,
    agent             TEXT,
    client            TEXT,               -- user agent, truncated
    api               TEXT,               -- 'anthropic' | 'openai'
    endpoint          TEXT,               -- 'messages' | 'count_tokens' | 'chat' | 'responses' | 'other'
    model             TEXT,
    status            INTEGER,
    body_bytes        INTEGER,
    sent_bytes        INTEGER,
    est_tokens_before INTEGER,
    est_tokens_after  INTEGER,
    input_tokens      INTEGER,
    cache_write_5m    INTEGER,
    cache_write_1h    INTEGER,
    cache_read        INTEGER,
    output_tokens     INTEGER,
    decision          TEXT,
    reason            TEXT,
    tokens_removed    INTEGER,
    figures           TEXT,
    realized_tokens   INTEGER,
    realized_usd      REAL,
    ttfb_ms           REAL,
    total_ms          REAL,
    error             TEXT
);
CREATE INDEX IF NOT EXISTS requests_ts ON requests (ts);
CREATE INDEX IF NOT EXISTS requests_session ON requests (session);
"""
