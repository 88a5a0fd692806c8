"""Tool inventory, removal list, session pins and realized filter savings.

Tables (no message content anywhere; a declaration's ``summary`` is the first
sentence of the tool's own description, which the client declared, not the user):

* ``tool_sessions``      one row per session whose tool declarations were captured
                         (the "coverage" of every suggestion).
* ``tool_declarations``  per (session, name): kind (builtin | client | mcp | deferred |
                         server | skill), MCP server, estimated tokens, first/last seen.
                         Skills are recorded as ``skill__<name>`` from the skill listing.
* ``tool_calls``         one row per tool_use id (Skill calls also as ``skill__<name>``).
* ``tool_removals``      the user's removal list (what new sessions pin).
* ``tool_removal_history`` every change to it: time, action, name, source
                         (cli | tray | dashboard | control_api).
* ``tool_session_pins``  the removal set fixed when a session started; survives
                         config changes and proxy restarts.
* ``tool_filter_savings`` realized savings: one row per (request, removed name), tokens
                         really not sent, priced at the tier that request was billed at.
"""

SQL = """
CREATE TABLE IF NOT EXISTS tool_sessions (
    session     TEXT PRIMARY KEY,
    client      TEXT NOT NULL DEFAULT '',
    model       TEXT NOT NULL DEFAULT '',
    first_seen  REAL NOT NULL,
    last_seen   REAL NOT NULL,
    requests    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS tool_declarations (
    session     TEXT NOT NULL,
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('builtin','client','mcp','deferred','server','skill')),
    server      TEXT,
    tokens      INTEGER NOT NULL,
    summary     TEXT NOT NULL DEFAULT '',
    first_seen  REAL NOT NULL,
    last_seen   REAL NOT NULL,
    PRIMARY KEY (session, name)
);
CREATE INDEX IF NOT EXISTS tool_declarations_name ON tool_declarations (name);

CREATE TABLE IF NOT EXISTS tool_calls (
    session     TEXT NOT NULL,
    tool_use_id TEXT NOT NULL,
    name        TEXT NOT NULL,
    ts          REAL NOT NULL,
    PRIMARY KEY (session, tool_use_id)
);
CREATE INDEX IF NOT EXISTS tool_calls_name ON tool_calls (name);

CREATE TABLE IF NOT EXISTS tool_removals (
    name        TEXT PRIMARY KEY,
    added_at    REAL NOT NULL,
    source      TEXT NOT NULL,
    forced      INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS tool_removal_history (
    id          INTEGER PRIMARY KEY,
    ts          REAL NOT NULL,
    action      TEXT NOT NULL,   -- remove | restore | on | off | repin
    name        TEXT NOT NULL DEFAULT '',
    source      TEXT NOT NULL CHECK (source IN ('cli','tray','dashboard','control_api')),
    detail      TEXT NOT NULL DEFAULT ''
);

CREATE TABLE IF NOT EXISTS tool_session_pins (
    session     TEXT PRIMARY KEY,
    pinned_at   REAL NOT NULL,
    enabled     INTEGER NOT NULL,
    names       TEXT NOT NULL    -- JSON list, sorted
);

CREATE TABLE IF NOT EXISTS tool_filter_savings (
    id          INTEGER PRIMARY KEY,
    ts          REAL NOT NULL,
    session     TEXT NOT NULL,
    agent       TEXT NOT NULL DEFAULT '',
    model       TEXT NOT NULL DEFAULT '',
    name        TEXT NOT NULL,
    tokens      INTEGER NOT NULL,
    tier        TEXT NOT NULL,   -- cache_read | write_5m | write_1h | input
    usd         REAL             -- NULL when no price was known for the model
);
CREATE INDEX IF NOT EXISTS tool_filter_savings_session ON tool_filter_savings (session);
"""
