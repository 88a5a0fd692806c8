"""The surgery log: one row per cut tool result, keyed by its tool_use_id.

No content is stored: the stub is regenerated from (kind, tokens,
original_sha256, stub_version), and ``stub_sha256`` proves the regenerated
bytes are the ones sent before. The original content is in the spill file
named by ``original_sha256``.
"""

SQL = """
CREATE TABLE IF NOT EXISTS cuts (
    tool_use_id TEXT PRIMARY KEY,
    session TEXT,
    agent TEXT,
    created_at REAL NOT NULL,
    kind TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    original_sha256 TEXT NOT NULL,
    stub_version INTEGER NOT NULL,
    stub_sha256 TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS cuts_session ON cuts(session);
CREATE INDEX IF NOT EXISTS cuts_created_at ON cuts(created_at);
"""
